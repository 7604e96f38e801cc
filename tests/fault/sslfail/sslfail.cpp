// An LD_PRELOAD layer that makes OpenSSL's SSL_new fail on demand: while the file named by
// $CAIRN_SSLFAIL_WHEN exists, SSL_new returns NULL with an error on the thread's OpenSSL error
// queue, as it does when OpenSSL runs out of memory. The TLS test uses it to show that a connection
// that cannot be set up is dropped and the listener goes on accepting (issue 13): Asio turns the
// failure into an exception in the accept loop. Otherwise every call goes to the real SSL_new.
//
// Plain C library calls only, no sanitizers (CMake builds it without them), so that it can sit in
// front of an ASan-built cairnd (which then needs ASAN_OPTIONS=verify_asan_link_order=0). OpenSSL's
// error functions are looked up at run time, so the layer does not link libssl itself.
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

extern "C" {

struct ssl_st;
struct ssl_ctx_st;

__attribute__((visibility("default"))) ssl_st* SSL_new(ssl_ctx_st* ctx) {
    using new_fn = ssl_st* (*)(ssl_ctx_st*);
    using err_new_fn = void (*)();
    using err_set_fn = void (*)(int, int, const char*, ...);
    static const auto real = reinterpret_cast<new_fn>(dlsym(RTLD_NEXT, "SSL_new"));
    const char* when = std::getenv("CAIRN_SSLFAIL_WHEN");
    struct stat st {};
    if (when != nullptr && ::stat(when, &st) == 0) {
        static const auto err_new = reinterpret_cast<err_new_fn>(dlsym(RTLD_DEFAULT, "ERR_new"));
        static const auto err_set = reinterpret_cast<err_set_fn>(dlsym(RTLD_DEFAULT, "ERR_set_error"));
        constexpr int lib_ssl = 20;            // ERR_LIB_SSL
        constexpr int reason_no_memory = 65;   // any reason: the packed code must not be 0
        if (err_new != nullptr && err_set != nullptr) {
            err_new();
            err_set(lib_ssl, reason_no_memory, nullptr);
        }
        return nullptr;
    }
    return real(ctx);
}

}  // extern "C"
