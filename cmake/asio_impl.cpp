// The one translation unit that compiles Asio's and Beast's implementation
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION), so
// that no other file pays for it.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
