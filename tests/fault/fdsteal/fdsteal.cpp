// An LD_PRELOAD layer that makes a closed socket's number belong to someone else at once, to show
// that mariadb_conn never touches a socket number libmariadb has closed (issue 13: found by
// ws_dispatch_fuzz, where a refused shard connect shut down a client's connection that had just
// been accepted under the number libmariadb had closed a moment before).
//
// After cairn_fdsteal_arm(), the next close(2) of an AF_INET stream socket closes it and then puts
// one end of a fresh socketpair at that number (the "victim"); the layer keeps the other end.
// cairn_fdsteal_victim_state() then says what became of the victim: 1 untouched, 0 touched (shut
// down, closed, or its epoll registration changed by epoll_ctl: in a server, that is how another
// connection's socket stops getting events), -1 nothing was stolen yet. Every call goes on to the
// real function.
//
// Plain C library calls only, no sanitizers (CMake builds it without them).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace {

using close_fn = int (*)(int);
using shutdown_fn = int (*)(int, int);
using epoll_ctl_fn = int (*)(int, int, int, epoll_event*);

close_fn real_close() {
    static const auto real = reinterpret_cast<close_fn>(dlsym(RTLD_NEXT, "close"));
    return real;
}

int armed = 0;
int stolen = -1;  // the number the victim sits at
int peer = -1;    // the layer's end of the victim's socketpair
int touched = 0;  // someone called close, shutdown or epoll_ctl on the victim's number

bool is_inet_stream(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    int type = 0;
    socklen_t type_len = sizeof type;
    return ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && a.ss_family == AF_INET &&
           ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void cairn_fdsteal_arm() { armed = 1; }

__attribute__((visibility("default"))) int cairn_fdsteal_victim_state() {
    if (stolen < 0) return -1;
    if (touched) return 0;
    if (::fcntl(stolen, F_GETFD) < 0) return 0;  // closed by someone
    char c = 0;
    const auto n = ::recv(peer, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;  // alive, nothing written
    return 0;  // EOF: shut down (or written to, which is as wrong)
}

__attribute__((visibility("default"))) int shutdown(int fd, int how) {
    static const auto real = reinterpret_cast<shutdown_fn>(dlsym(RTLD_NEXT, "shutdown"));
    if (stolen >= 0 && fd == stolen) touched = 1;
    return real(fd, how);
}

__attribute__((visibility("default"))) int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
    static const auto real = reinterpret_cast<epoll_ctl_fn>(dlsym(RTLD_NEXT, "epoll_ctl"));
    if (stolen >= 0 && fd == stolen) touched = 1;
    return real(epfd, op, fd, ev);
}

__attribute__((visibility("default"))) int close(int fd) {
    if (stolen >= 0 && fd == stolen) touched = 1;
    if (!armed || !is_inet_stream(fd)) return real_close()(fd);
    armed = 0;
    const int r = real_close()(fd);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        // The lowest free number is usually the one just closed: then the pair already sits there.
        if (sv[0] == fd || ::dup2(sv[0], fd) == fd) {
            stolen = fd;
            peer = sv[1];
        }
        if (sv[0] != fd) real_close()(sv[0]);
    }
    return r;
}

}  // extern "C"
