import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes the process holds: on Linux its resident set after handing freed heap pages
/// back to the system (`malloc_trim`, looked up at run time: Glibc's module does not export
/// malloc.h), so memory freed by earlier phases does not hide what later ones allocate;
/// elsewhere the allocator's count of bytes in use. Taken before and after subscribing,
/// the difference is what the subscriptions hold.
func allocatedBytes() -> Int {
    #if canImport(Glibc)
    typealias Trim = @convention(c) (Int) -> Int32
    if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #elseif canImport(Darwin)
    var statistics = malloc_statistics_t()
    malloc_zone_statistics(nil, &statistics)
    return Int(statistics.size_in_use)
    #else
    return 0
    #endif
}

/// The process's peak resident set so far, in bytes (what `/usr/bin/time -f %M` reports at exit).
func peakResidentBytes() -> Int {
    var usage = rusage()
    #if canImport(Darwin)
    getrusage(RUSAGE_SELF, &usage)
    return Int(usage.ru_maxrss)
    #else
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Int(usage.ru_maxrss) * 1024
    #endif
}

/// What a set of subscriptions holds: allocated bytes after subscribing minus before,
/// divided by subscriptions and by held records (each subscription's results counted).
struct HeldMemory {
    let bytes: Int
    let subscriptions: Int
    let heldRecords: Int

    /// Allocated bytes since `before`, for `subscriptions` holding `heldRecords` in total.
    init(since before: Int, subscriptions: Int, heldRecords: Int) {
        bytes = allocatedBytes() - before
        self.subscriptions = subscriptions
        self.heldRecords = heldRecords
    }

    var perSubscription: Double { Double(bytes) / Double(max(subscriptions, 1)) }
    var perHeldRecord: Double { Double(bytes) / Double(max(heldRecords, 1)) }

    /// One line: totals, per subscription, per held record, and the peak RSS so far.
    var line: String {
        String(format: "memory held by %d subscription(s): %.1f MB, %.0f bytes per subscription, %.1f bytes per held record (%d held); peak RSS %.1f MB",
               subscriptions, Double(bytes) / 1e6, perSubscription, perHeldRecord, heldRecords, Double(peakResidentBytes()) / 1e6)
    }
}
