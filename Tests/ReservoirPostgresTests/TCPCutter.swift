import Foundation
import Reservoir
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback TCP proxy in front of the test server that can cut a connection at the moment
/// a write's `COMMIT` goes through it, and refuse new connections: the faults of a network
/// between an app and its server, made on demand.
///
/// The writer's `COMMIT` is recognised in the client's bytes as libpq's Parse message for it
/// (`\0COMMIT\0`: an unnamed statement whose text is `COMMIT`); reads end with `END` (or, on a
/// failure, `ROLLBACK; …` in a simple query), which does not match.
final class TCPCutter: @unchecked Sendable {
    // @unchecked: the mutable state is under `lock`; descriptors are used by one thread each
    // until closed under the lock.

    enum Cut {
        /// The `COMMIT` reaches the server, which commits; the client never hears back.
        case afterCommitSent
        /// The `COMMIT` (and the writes sent with it) never reach the server, which rolls back.
        case beforeCommitSent
    }

    let port: UInt16
    private let listener: Int32
    private let upstreamPort: UInt16
    private let lock = NSLock()
    private var armed: Cut?
    private var refusing = false
    private var cuts = 0
    private var closedListener = false

    init(upstreamPort: UInt16) throws {
        self.upstreamPort = upstreamPort
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ReservoirError(.backend, "TCPCutter: socket() failed: errno \(errno)") }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(socket, 64) == 0 else {
            close(socket)
            throw ReservoirError(.backend, "TCPCutter: cannot listen on loopback: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        listener = socket
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// A fresh store on the test server (`options` added), its configuration string through a
    /// new cutter, the cutter, and the direct configuration string (to write past the cutter,
    /// and to drop the store with).
    static func inFrontOfFreshStore(_ options: String = "") throws -> (configuration: String, cutter: TCPCutter, direct: String) {
        let direct = try TestServer.freshStore(options)
        guard var components = URLComponents(string: direct), let port = components.port else {
            throw ReservoirError(.invalidConfiguration, "TCPCutter: the test server's URL \(direct) has no port")
        }
        let cutter = try TCPCutter(upstreamPort: UInt16(port))
        components.port = Int(cutter.port)
        guard let configuration = components.string else {
            throw ReservoirError(.invalidConfiguration, "TCPCutter: cannot rewrite \(direct) to the cutter's port")
        }
        return (configuration, cutter, direct)
    }

    /// Cuts the next connection whose client sends a write's `COMMIT`, as `cut` says.
    func arm(_ cut: Cut) { lock.withLock { armed = cut } }
    /// Cuts nothing more (a cut armed and not yet made is dropped).
    func disarm() { lock.withLock { armed = nil } }
    /// While true, new connections are accepted and closed at once (the server looks gone).
    func refuseNewConnections(_ refuse: Bool) { lock.withLock { refusing = refuse } }
    /// How many connections were cut so far.
    var cutCount: Int { lock.withLock { cuts } }

    func stop() {
        lock.withLock {
            guard !closedListener else { return }
            closedListener = true
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    deinit { stop() }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            if lock.withLock({ refusing }) {
                close(client)
                continue
            }
            let upstream = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard upstream >= 0, connected == 0 else {
                close(client)
                if upstream >= 0 { close(upstream) }
                continue
            }
            let pair = Pair(client: client, upstream: upstream)
            Thread { [self] in pumpToServer(pair) }.start()
            Thread { [self] in pumpToClient(pair) }.start()
        }
    }

    /// One proxied connection; each side is closed once, by whoever ends it.
    private final class Pair: @unchecked Sendable {
        let client: Int32
        let upstream: Int32
        private let lock = NSLock()
        private var clientClosed = false
        private var upstreamWritesClosed = false
        private var finished = 0

        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }

        func closeClient() {
            lock.withLock {
                guard !clientClosed else { return }
                clientClosed = true
                shutdown(client, Int32(SHUT_RDWR))
            }
        }

        /// The server reads what was sent, then end of input.
        func endUpstreamWrites() {
            lock.withLock {
                guard !upstreamWritesClosed else { return }
                upstreamWritesClosed = true
                shutdown(upstream, Int32(SHUT_WR))
            }
        }

        /// Both pumps call this once; the last closes the descriptors.
        func pumpEnded() {
            lock.withLock {
                finished += 1
                if finished == 2 {
                    close(client)
                    close(upstream)
                }
            }
        }
    }

    private static let commitParse: [UInt8] = [0] + Array("COMMIT".utf8) + [0]

    private func pumpToServer(_ pair: Pair) {
        defer { pair.pumpEnded() }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(pair.client, &buffer, buffer.count)
            if count <= 0 {
                pair.endUpstreamWrites()
                return
            }
            let chunk = Array(buffer[0..<count])
            let cut: Cut? = lock.withLock {
                guard let armed, Self.contains(chunk, Self.commitParse) else { return nil }
                self.armed = nil
                cuts += 1
                return armed
            }
            switch cut {
            case .afterCommitSent?:
                // The client is cut before the server gets the chunk: a server answering before
                // this thread ran on (a busy machine) had its answer forwarded, and the client
                // heard its COMMIT succeed.
                pair.closeClient()
                _ = Self.writeAll(pair.upstream, chunk)
                pair.endUpstreamWrites()
                return
            case .beforeCommitSent?:
                pair.endUpstreamWrites()
                pair.closeClient()
                return
            case nil:
                if !Self.writeAll(pair.upstream, chunk) {
                    pair.closeClient()
                    return
                }
            }
        }
    }

    private func pumpToClient(_ pair: Pair) {
        defer { pair.pumpEnded() }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var clientGone = false
        while true {
            let count = read(pair.upstream, &buffer, buffer.count)
            if count <= 0 {
                pair.closeClient()
                return
            }
            // After a cut the server's answers are read and dropped, so it sees no error
            // before it has run everything it received.
            if !clientGone, !Self.writeAll(pair.client, Array(buffer[0..<count])) { clientGone = true }
        }
    }

    private static func writeAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return true }
        }
        return false
    }
}
