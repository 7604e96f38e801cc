// The shard map's versions on shard 0 (online resharding, docs/resharding.md "Versions on the
// shards"): table shard_maps holds one row per split — the map after it, which shard split, the new
// shard and its address, and the split's state — and table shard_map_adoptions the seq from which each
// gateway routes by that version. Version 1 is the config's equal ranges and is never written, so a
// deployment that never split has no rows. Every change is one conditional statement: two gateways
// (or two operators) proposing a split at once get one version between them, and a state moves only
// from the state the mover read. The caller owns the connection (shard 0's); any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// A split's states, in the order it passes them (docs/resharding.md, "The phases"); failed from any
// state before switched.
enum class split_state : std::uint8_t { planned, adopting, copying, catching_up, verifying, switched, done, cleaning, retired, failed };

std::string_view split_state_name(split_state s) noexcept;
std::optional<split_state> split_state_from_name(std::string_view name) noexcept;
// Whether a split may move from `from` to `to`: the next state, or failed before switched (once reads
// have moved, the only way is forward).
bool split_may_move(split_state from, split_state to) noexcept;
// Whether a split in state s has ended (another split may be proposed).
constexpr bool split_ended(split_state s) noexcept { return s == split_state::retired || s == split_state::failed; }

struct stored_map {
    std::uint32_t version = 1;
    core::shard_map map = core::shard_map::equal_ranges(1);
    std::uint32_t split_shard = 0;  // whose range split
    std::uint32_t new_shard = 0;    // which took its upper half (= the shard count before the split)
    std::string new_address;        // host:port, as every gateway's [[shards]] must list it
    split_state state = split_state::planned;
    std::uint64_t state_ms = 0;     // when it entered that state (ms since the Unix epoch)
};

// Creates both tables if they do not exist.
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_create_map_schema(mariadb_conn& conn);

// Every version, ascending (empty: the deployment never split; tables missing count as empty).
// shard_rejected when a row does not read back as a valid map or state (an edited row): why, if given,
// names its version and what is wrong.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<stored_map>>> async_read_maps(mariadb_conn& conn,
                                                                                        std::string* why = nullptr);

// Proposes splitting `shard` of the newest map (the config's equal_ranges(shard_count) if none) as
// version newest + 1 in state planned, the new shard at new_address. bad_request when the shard does not
// exist or its range cannot split (core::shard_map::split); conflict when the newest split has not
// ended, or when another proposal took that version first. Returns the stored row.
[[nodiscard]] boost::asio::awaitable<core::result<stored_map>> async_propose_split(mariadb_conn& conn, std::uint32_t shard_count,
                                                                                   std::uint32_t shard, std::string_view new_address,
                                                                                   std::uint64_t now_ms);

// Moves version's state from `from` to `to` if it is still `from`. bad_request when the move is not
// allowed (split_may_move); conflict when the row is not in `from` (another mover was first) or absent.
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_move_split(mariadb_conn& conn, std::uint32_t version,
                                                                          split_state from, split_state to, std::uint64_t now_ms);

// Records that gateway node_id routes by version from seq from_seq on. The first record of a node
// stays (a gateway that restarts and records again keeps its first seq). Returns the seq that holds.
[[nodiscard]] boost::asio::awaitable<core::result<std::uint64_t>> async_adopt(mariadb_conn& conn, std::uint32_t version,
                                                                              std::uint32_t node_id, std::uint64_t from_seq);

struct adoption {
    std::uint32_t node_id = 0;
    std::uint64_t from_seq = 0;
    split_state seen = split_state::planned;  // the latest state the gateway routes by (async_mark_seen)
    std::uint64_t cut_over_seq = 0;           // its cut-over seq, once it has seen done (else 0)
};
// The gateways that adopted version, by node id.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<adoption>>> async_adoptions(mariadb_conn& conn, std::uint32_t version);

// Records that gateway node_id routes by version's table for `state` (never moves it back), with its
// cut-over seq once it has one (else 0): the driver moves a split past switched and done only once every
// live gateway has seen it, and cleans only once the old owner applied each one's ops below its cut-over
// (split_driver.hpp).
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_mark_seen(mariadb_conn& conn, std::uint32_t version,
                                                                         std::uint32_t node_id, split_state state,
                                                                         std::uint64_t cut_over_seq);

// What the driving gateway does for a split now, for `cairn reshard status` on any gateway: written by
// the driver (split_driver.hpp) every few seconds while it copies or cleans and whenever what it waits
// for changes; one row per version, the latest write wins.
struct split_progress {
    std::uint32_t driver = 0;          // the driving gateway's node id
    std::string note;                  // what it does or waits for, in words
    std::string table;                 // the table the copy or clean is in (empty between them)
    std::uint64_t rows_read = 0;       // source rows read by the copy or clean so far
    std::uint64_t rows_done = 0;       // of them, copied (or deleted)
    std::uint64_t rows_estimate = 0;   // rows it will read in all (the source's table statistics; 0: unknown)
    std::uint64_t started_ms = 0;      // when the copy or clean started (0: none runs)
    std::uint64_t updated_ms = 0;      // when this was written
};
// Errors: the connection's. Creates its table if it is missing (a deployment whose map tables an
// older cairnd made).
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_write_progress(mariadb_conn& conn, std::uint32_t version,
                                                                              const split_progress& p);
// nullopt: nothing written for that version yet.
[[nodiscard]] boost::asio::awaitable<core::result<std::optional<split_progress>>> async_read_progress(mariadb_conn& conn,
                                                                                                    std::uint32_t version);

// The parts of a split's copy and clean that are done, so that a driver that restarts (or another
// gateway that takes over) goes on where the last one was: a copy group (its tables copied from one
// snapshot: a group is the unit a copy may restart at, docs/resharding.md) or a table cleaned.
enum class split_step : std::uint8_t { copy, clean };
[[nodiscard]] std::string_view split_step_name(split_step s) noexcept;
struct step_done {
    std::uint32_t version = 0;
    split_step step = split_step::copy;
    std::string unit;             // the copy group's name, or the cleaned table's
    std::uint64_t rows_read = 0;  // source rows the part read
    std::uint64_t rows_done = 0;  // of them, copied (or deleted)
    std::uint32_t driver = 0;     // the gateway that did it
    std::uint64_t done_ms = 0;
};
// Errors: the connection's. Creates its table if it is missing.
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_mark_step_done(mariadb_conn& conn, const step_done& d);
// In the order they were done; empty if nothing is.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<step_done>>> async_steps_done(mariadb_conn& conn, std::uint32_t version,
                                                                                          split_step step);

// How far a copy got inside a group whose rows stand alone (range_copy.hpp's copy_resume): the table
// it was in and the scan key of the last row it wrote there, one per version and group (table
// shard_map_resume), so that a driver after a restart resumes there instead of at the group's start.
struct copy_position {
    std::uint32_t version = 0;
    std::string group;
    std::string table;
    std::vector<std::string> after;  // the scan key's columns (bytes; integers in decimal)
    std::uint64_t rows_read = 0;     // of the table so far
    std::uint32_t driver = 0;
    std::uint64_t at_ms = 0;
    friend bool operator==(const copy_position&, const copy_position&) = default;
};
// Replaces the group's position.
[[nodiscard]] boost::asio::awaitable<core::result<void>> async_mark_copy_position(mariadb_conn& conn, const copy_position& p);
// The positions of a version's groups; a row whose key does not decode is left out (its group is
// copied whole). Empty if there are none.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<copy_position>>> async_copy_positions(mariadb_conn& conn,
                                                                                                  std::uint32_t version);

}  // namespace cairn::shards
