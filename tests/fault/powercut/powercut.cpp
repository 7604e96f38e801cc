// An LD_PRELOAD layer that lets a test see what a power loss would keep (issue 14). kill -9 alone
// cannot: the page cache outlives the process, so a missing fsync goes unnoticed. Loaded into
// cairnd, this layer watches one file, $CAIRN_POWERCUT_FILE (the journal's data.mdb; its lock file
// holds nothing durable), and, before each write to it, appends the bytes the write overwrites
// (and the file's size) to an undo log at $CAIRN_POWERCUT_UNDO. A successful fsync or fdatasync of
// the file empties the log: what it
// held is durable. Writes through a descriptor opened with O_SYNC or O_DSYNC are durable when they
// return, so they are not logged. After kill -9 the test rolls the log back
// (tests/fault/powercut/undo_log.hpp): the files then hold exactly what was made durable.
//
// The control: with CAIRN_POWERCUT_IGNORE_SYNC=1 no write is ever durable (syncs do not empty the
// log and O_DSYNC is ignored), as on a disk that lies about flushing: the test must see losses.
//
// Disk errors: while the file $CAIRN_POWERCUT_FAIL_WHEN exists, every write to the watched file
// (CAIRN_POWERCUT_FAIL_ON=write), every write that would make it longer (=grow: a full disk, which
// still lets blocks already allocated be overwritten, as LMDB's meta pages are), or every
// fsync/fdatasync of it (=sync) fails with the errno $CAIRN_POWERCUT_FAIL_ERRNO (e.g. 28 ENOSPC,
// 5 EIO) and does nothing: the test creates and removes the file to make the disk fail and come back.
//
// Plain C library calls only, no sanitizers (CMake builds it without them), so that it can sit in
// front of an ASan-built cairnd (which then needs ASAN_OPTIONS=verify_asan_link_order=0).
#include "tests/fault/powercut/undo_log.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

using open_fn = int (*)(const char*, int, ...);
using openat_fn = int (*)(int, const char*, int, ...);
using close_fn = int (*)(int);
using pwrite_fn = ssize_t (*)(int, const void*, size_t, off_t);
using write_fn = ssize_t (*)(int, const void*, size_t);
using writev_fn = ssize_t (*)(int, const struct iovec*, int);
using pwritev_fn = ssize_t (*)(int, const struct iovec*, int, off_t);
using sync_fn = int (*)(int);
using ftruncate_fn = int (*)(int, off_t);

constexpr int fds_max = 4096;
enum watch : unsigned char { none = 0, buffered = 1, durable = 2 };

struct layer {
    open_fn real_open = nullptr;
    open_fn real_open64 = nullptr;
    openat_fn real_openat = nullptr;
    openat_fn real_openat64 = nullptr;
    close_fn real_close = nullptr;
    pwrite_fn real_pwrite = nullptr;
    pwrite_fn real_pwrite64 = nullptr;
    write_fn real_write = nullptr;
    writev_fn real_writev = nullptr;
    pwritev_fn real_pwritev = nullptr;
    pwritev_fn real_pwritev64 = nullptr;
    sync_fn real_fsync = nullptr;
    sync_fn real_fdatasync = nullptr;
    ftruncate_fn real_ftruncate = nullptr;
    ftruncate_fn real_ftruncate64 = nullptr;

    std::string file;
    bool ignore_sync = false;
    std::string fail_when;  // the trigger file
    bool fail_writes = false;
    bool fail_growth_only = false;
    bool fail_syncs = false;
    int fail_errno = 0;
    int undo_fd = -1;
    int read_fd = -1;  // the watched file, read-only: what a write overwrites is read here (a
                       // descriptor being written may be write-only, as LMDB's meta descriptor is)
    std::mutex mu;
    std::atomic<unsigned char> fds[fds_max] = {};
};

template <class F>
F next(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

layer* make_layer() {
    auto* p = new layer;  // never destroyed: calls may come during exit
    layer& l = *p;
    l.real_open = next<open_fn>("open");
    l.real_open64 = next<open_fn>("open64");
    l.real_openat = next<openat_fn>("openat");
    l.real_openat64 = next<openat_fn>("openat64");
    l.real_close = next<close_fn>("close");
    l.real_pwrite = next<pwrite_fn>("pwrite");
    l.real_pwrite64 = next<pwrite_fn>("pwrite64");
    l.real_write = next<write_fn>("write");
    l.real_writev = next<writev_fn>("writev");
    l.real_pwritev = next<pwritev_fn>("pwritev");
    l.real_pwritev64 = next<pwritev_fn>("pwritev64");
    l.real_fsync = next<sync_fn>("fsync");
    l.real_fdatasync = next<sync_fn>("fdatasync");
    l.real_ftruncate = next<ftruncate_fn>("ftruncate");
    l.real_ftruncate64 = next<ftruncate_fn>("ftruncate64");
    if (const char* f = std::getenv("CAIRN_POWERCUT_FILE")) l.file = f;
    if (const char* w = std::getenv("CAIRN_POWERCUT_FAIL_WHEN")) l.fail_when = w;
    if (const char* on = std::getenv("CAIRN_POWERCUT_FAIL_ON")) {
        l.fail_writes = std::strcmp(on, "write") == 0 || std::strcmp(on, "grow") == 0;
        l.fail_growth_only = std::strcmp(on, "grow") == 0;
        l.fail_syncs = std::strcmp(on, "sync") == 0;
    }
    if (const char* e = std::getenv("CAIRN_POWERCUT_FAIL_ERRNO")) l.fail_errno = std::atoi(e);
    if (const char* s = std::getenv("CAIRN_POWERCUT_IGNORE_SYNC")) l.ignore_sync = std::strcmp(s, "1") == 0;
    if (const char* u = std::getenv("CAIRN_POWERCUT_UNDO")) {
        l.undo_fd = l.real_open(u, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (l.undo_fd < 0) l.file.clear();  // not configured: watch nothing
    return p;
}

// Made on first use, which may come before this library's constructors run (the sanitizer
// runtime and libc open files early).
layer& the_layer() {
    static layer* l = make_layer();
    return *l;
}

__attribute__((constructor)) void powercut_init() { (void)the_layer(); }

bool watched_path(const char* path) {
    const layer& l = the_layer();
    return !l.file.empty() && path != nullptr && l.file == path;
}

void note_open(int fd, const char* path, int flags) {
    if (fd < 0 || fd >= fds_max || !watched_path(path)) return;
    layer& l = the_layer();
    const bool sync_fd = (flags & (O_SYNC | O_DSYNC)) != 0 && !l.ignore_sync;
    l.fds[fd] = sync_fd ? durable : buffered;
}

bool watched(int fd) { return fd >= 0 && fd < fds_max && the_layer().fds[fd].load() != none; }
bool logged(int fd) { return fd >= 0 && fd < fds_max && the_layer().fds[fd].load() == buffered; }

// Whether an injected disk error applies now (writes: for_sync false; syncs: true).
bool failing(int fd, bool for_sync) {
    const layer& l = the_layer();
    if (l.fail_when.empty() || l.fail_errno == 0 || !watched(fd)) return false;
    if (for_sync ? !l.fail_syncs : !l.fail_writes) return false;
    return access(l.fail_when.c_str(), F_OK) == 0;
}

// Appends the undo record of a write of len bytes at offset to the log, before the write.
void record(int fd, off_t offset, std::size_t len) {
    layer& l = the_layer();
    struct stat st {};
    if (fstat(fd, &st) != 0) std::abort();
    const auto size_before = static_cast<std::uint64_t>(st.st_size);
    const auto off = static_cast<std::uint64_t>(offset);
    const std::uint64_t old_len = off >= size_before ? 0 : std::min<std::uint64_t>(len, size_before - off);
    std::vector<char> rec(cairn::powercut::record_header_bytes + old_len);
    cairn::powercut::put_header(rec.data(), off, old_len, size_before);
    if (old_len > 0) {
        if (l.read_fd < 0) l.read_fd = l.real_open(l.file.c_str(), O_RDONLY | O_CLOEXEC, 0);
        if (l.read_fd < 0 ||
            pread(l.read_fd, rec.data() + cairn::powercut::record_header_bytes, old_len, offset) !=
                static_cast<ssize_t>(old_len)) {
            // Better to crash the run than let a write through unlogged: the test would pass wrongly.
            std::abort();
        }
    }
    // One write per record: a record cut short by the kill is ignored by the reader (its data
    // write had not started).
    if (l.real_write(l.undo_fd, rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) std::abort();
}

void synced(int fd) {
    layer& l = the_layer();
    if (l.ignore_sync || fd < 0 || fd >= fds_max || l.fds[fd].load() == none) return;
    (void)l.real_ftruncate(l.undo_fd, 0);
}

std::size_t iov_bytes(const struct iovec* iov, int n) {
    std::size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    return total;
}

// Where a write without an offset lands: the end for an O_APPEND descriptor, else its position.
constexpr off_t at_position = -1;

// The one path of every write to a descriptor: an injected error, else (for a logged descriptor)
// the undo record of what it overwrites, made before the write itself.
off_t position_of(int fd) {
    return (fcntl(fd, F_GETFL) & O_APPEND) != 0 ? lseek(fd, 0, SEEK_END) : lseek(fd, 0, SEEK_CUR);
}

// Whether a write of len bytes at offset would make the file longer.
bool grows(int fd, off_t offset, std::size_t len) {
    struct stat st {};
    if (offset == at_position) offset = position_of(fd);
    return fstat(fd, &st) != 0 || offset < 0 || offset + static_cast<off_t>(len) > st.st_size;
}

template <class Write>
ssize_t write_through(int fd, off_t offset, std::size_t len, Write real) {
    if (failing(fd, false) && (!the_layer().fail_growth_only || grows(fd, offset, len))) {
        errno = the_layer().fail_errno;
        return -1;
    }
    if (!logged(fd)) return real();
    std::lock_guard lock(the_layer().mu);
    if (offset == at_position) offset = position_of(fd);
    if (offset >= 0) record(fd, offset, len);
    return real();
}

// The common tail of every open: the descriptor is watched if it is the file's.
template <class Open>
int open_through(const char* path, int flags, Open real) {
    const int fd = real();
    note_open(fd, path, flags);  // absolute paths only (a relative one does not match)
    return fd;
}

// The one path of every sync: an injected error, else the sync, which makes every logged write durable.
template <class Sync>
int sync_through(int fd, Sync real) {
    if (failing(fd, true)) {
        errno = the_layer().fail_errno;
        return -1;
    }
    std::lock_guard lock(the_layer().mu);
    const int rc = real();
    if (rc == 0) synced(fd);
    return rc;
}

}  // namespace

// open's optional third argument, present with O_CREAT or O_TMPFILE.
#define CAIRN_POWERCUT_MODE(flags)                                 \
    mode_t mode = 0;                                               \
    if (((flags) & (O_CREAT | O_TMPFILE)) != 0) {                  \
        va_list ap;                                                \
        va_start(ap, flags);                                       \
        mode = static_cast<mode_t>(va_arg(ap, int));               \
        va_end(ap);                                                \
    }

extern "C" {

int open(const char* path, int flags, ...) {
    CAIRN_POWERCUT_MODE(flags)
    return open_through(path, flags, [&] { return the_layer().real_open(path, flags, mode); });
}

int open64(const char* path, int flags, ...) {
    CAIRN_POWERCUT_MODE(flags)
    return open_through(path, flags, [&] { return the_layer().real_open64(path, flags, mode); });
}

int openat(int dirfd, const char* path, int flags, ...) {
    CAIRN_POWERCUT_MODE(flags)
    return open_through(path, flags, [&] { return the_layer().real_openat(dirfd, path, flags, mode); });
}

int openat64(int dirfd, const char* path, int flags, ...) {
    CAIRN_POWERCUT_MODE(flags)
    return open_through(path, flags, [&] { return the_layer().real_openat64(dirfd, path, flags, mode); });
}

int close(int fd) {
    if (fd >= 0 && fd < fds_max) the_layer().fds[fd] = none;
    return the_layer().real_close(fd);
}

ssize_t pwrite(int fd, const void* buf, size_t len, off_t offset) {
    return write_through(fd, offset, len, [&] { return the_layer().real_pwrite(fd, buf, len, offset); });
}

ssize_t pwrite64(int fd, const void* buf, size_t len, off_t offset) {
    return write_through(fd, offset, len, [&] { return the_layer().real_pwrite64(fd, buf, len, offset); });
}

ssize_t write(int fd, const void* buf, size_t len) {
    return write_through(fd, at_position, len, [&] { return the_layer().real_write(fd, buf, len); });
}

ssize_t writev(int fd, const struct iovec* iov, int n) {
    return write_through(fd, at_position, iov_bytes(iov, n), [&] { return the_layer().real_writev(fd, iov, n); });
}

ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t offset) {
    return write_through(fd, offset, iov_bytes(iov, n), [&] { return the_layer().real_pwritev(fd, iov, n, offset); });
}

ssize_t pwritev64(int fd, const struct iovec* iov, int n, off_t offset) {
    return write_through(fd, offset, iov_bytes(iov, n),
                         [&] { return the_layer().real_pwritev64(fd, iov, n, offset); });
}

int ftruncate(int fd, off_t len) {
    if (!logged(fd)) return the_layer().real_ftruncate(fd, len);
    std::lock_guard lock(the_layer().mu);
    struct stat st {};
    // Shrinking loses the tail: log it; growing only changes the size, which every record keeps.
    if (fstat(fd, &st) == 0 && len < st.st_size) record(fd, len, static_cast<std::size_t>(st.st_size - len));
    else record(fd, st.st_size, 0);
    return the_layer().real_ftruncate(fd, len);
}

int ftruncate64(int fd, off_t len) { return ftruncate(fd, len); }

int fsync(int fd) { return sync_through(fd, [&] { return the_layer().real_fsync(fd); }); }

int fdatasync(int fd) { return sync_through(fd, [&] { return the_layer().real_fdatasync(fd); }); }

}  // extern "C"
