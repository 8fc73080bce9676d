import Observation
import OpenCombineShim

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Sync {
    /// The replica's status as an `@Observable` object on the main actor: see ``LiveSyncStatus``.
    @MainActor
    public func live() -> LiveSyncStatus {
        LiveSyncStatus(self)
    }
}

/// A replica's ``SyncStatus``, kept current on the main actor for SwiftUI: a view reading
/// ``status`` re-renders when the replica connects, goes offline, pulls or fails.
///
///     Text(sync.live().status.isConnected ? "Synced" : "Offline")
///
/// Changes made on other threads arrive in a block on the main queue, coalesced while the main
/// actor is busy. It observes until it is released.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor @Observable
public final class LiveSyncStatus {
    /// The replica's status, as last reported.
    public private(set) var status: SyncStatus
    @ObservationIgnored private let feed: MainActorFeed<SyncStatus>

    /// Starts observing `sync`'s status; the same as `sync.live()`.
    public init(_ sync: Sync) {
        status = sync.status
        let box = WeakBox<LiveSyncStatus>()
        feed = MainActorFeed(onValue: { box.object?.receive($0) }, onFailure: { _ in })
        box.object = self
        sync.statusPublisher.setFailureType(to: (any Error).self).subscribe(feed)
    }

    deinit {
        feed.cancel()
    }

    private func receive(_ status: SyncStatus) {
        self.status = status
    }
}
