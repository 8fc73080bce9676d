import CLMDB
import Foundation
import Testing

/// `clmdb_file_end`, the truncation check's `lseek(fd, 0, SEEK_END)` (a system call made
/// inline on x86-64 Linux), must answer as `lseek` does: the file's size, the offset moved
/// there, and -1 with errno set for a descriptor that is not open.
@Suite struct FileEndTests {
    @Test(arguments: [0, 1, 4095, 4096, 1 << 20, (1 << 20) + 17])
    func answersAsLseekDoes(size: Int) throws {
        let path = NSTemporaryDirectory() + "reservoir-file-end-\(UUID().uuidString)"
        defer { unlink(path) }
        let writer = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(writer >= 0)
        defer { close(writer) }
        try #require(ftruncate(writer, off_t(size)) == 0)
        let reader = open(path, O_RDONLY)
        try #require(reader >= 0)
        defer { close(reader) }
        #expect(clmdb_file_end(reader) == Int64(size))
        #expect(lseek(reader, 0, SEEK_CUR) == off_t(size), "the offset is left at the end, as lseek leaves it")
        // The size as it is now, not as it was: the check must see a file shortened meanwhile.
        try #require(ftruncate(writer, off_t(size / 2)) == 0)
        #expect(clmdb_file_end(reader) == Int64(size / 2))
    }

    @Test func aDescriptorNotOpenIsAnErrorWithErrno() throws {
        let path = NSTemporaryDirectory() + "reservoir-file-end-\(UUID().uuidString)"
        defer { unlink(path) }
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        close(fd)
        errno = 0
        #expect(clmdb_file_end(fd) == -1)
        #expect(errno == EBADF, "errno \(errno)")
        let pipeEnds = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
        defer { pipeEnds.deallocate() }
        try #require(pipe(pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        errno = 0
        #expect(clmdb_file_end(pipeEnds[0]) == -1, "a pipe cannot seek")
        #expect(errno == ESPIPE, "errno \(errno)")
    }
}
