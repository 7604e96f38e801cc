#include "journal/detail/record_codec.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"
#include "journal/detail/record_format.hpp"

#include <msgpack.hpp>

#include <algorithm>

namespace cairn::journal::detail {
namespace {

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};

using packer = msgpack::packer<string_writer>;

void pack_task_fields(packer& pk, const error_task& t) {
    CAIRN_ASSERT(t.errors.size() <= task_errors_max);
    CAIRN_ASSERT(t.op_bytes.size() <= core::op_record_bytes_max);
    pk.pack(task_format_version);
    pk.pack(t.shard);
    pk.pack(t.seq);
    pk.pack(t.due_ms);
    pk.pack(t.attempts);
    pk.pack(t.first_failed_ms);
    pk.pack_array(static_cast<std::uint32_t>(t.errors.size()));
    for (const auto& e : t.errors) {
        CAIRN_ASSERT(e.size() <= task_error_bytes_max);
        pk.pack(e);
    }
    pk.pack_bin(static_cast<std::uint32_t>(t.op_bytes.size()));
    pk.pack_bin_body(t.op_bytes.data(), static_cast<std::uint32_t>(t.op_bytes.size()));
}

// Throws msgpack's exceptions on a type mismatch; callers catch them.
error_task unpack_task_fields(const msgpack::object* f) {
    if (f[0].as<std::uint8_t>() != task_format_version) throw msgpack::type_error();
    error_task t;
    t.shard = f[1].as<std::uint32_t>();
    t.seq = f[2].as<std::uint64_t>();
    t.due_ms = f[3].as<std::uint64_t>();
    t.attempts = f[4].as<std::uint32_t>();
    t.first_failed_ms = f[5].as<std::uint64_t>();
    if (f[6].type != msgpack::type::ARRAY || f[6].via.array.size > task_errors_max) throw msgpack::type_error();
    for (std::uint32_t i = 0; i < f[6].via.array.size; ++i) {
        t.errors.push_back(f[6].via.array.ptr[i].as<std::string>());
    }
    if (f[7].type != msgpack::type::BIN) throw msgpack::type_error();
    t.op_bytes.assign(f[7].via.bin.ptr, f[7].via.bin.size);
    return t;
}

// Limits that fit every valid record; anything larger is corrupt.
msgpack::object_handle unpack_bounded(std::span<const char> bytes, std::size_t array_max) {
    const msgpack::unpack_limit limit(std::min(array_max, bytes.size()), 0, task_error_bytes_max,
                                      core::op_record_bytes_max, 0, 3);
    std::size_t offset = 0;
    msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
    if (offset != bytes.size()) throw msgpack::type_error();
    return oh;
}

}  // namespace

void bound_history(error_task& t) {
    if (t.errors.size() > task_errors_max) {
        t.errors.erase(t.errors.begin(), t.errors.end() - static_cast<std::ptrdiff_t>(task_errors_max));
    }
    for (auto& e : t.errors) {
        if (e.size() <= task_error_bytes_max) continue;
        std::size_t cut = task_error_bytes_max;
        // Step back over UTF-8 continuation bytes so the cut does not split a character.
        while (cut > 0 && (static_cast<unsigned char>(e[cut]) & 0xC0) == 0x80) --cut;
        e.resize(cut);
    }
}

std::string encode_task(const error_task& t) {
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(task_record_fields);
    pack_task_fields(pk, t);
    return out;
}

core::result<error_task> decode_task(std::span<const char> bytes) {
    try {
        auto oh = unpack_bounded(bytes, task_errors_max + task_record_fields);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != task_record_fields) {
            return core::errc::journal_corrupt;
        }
        return unpack_task_fields(obj.via.array.ptr);
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

std::string encode_dead(const dead_letter& d) {
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(dead_record_fields);
    pack_task_fields(pk, d.task);
    pk.pack(d.died_ms);
    return out;
}

core::result<dead_letter> decode_dead(std::span<const char> bytes) {
    try {
        auto oh = unpack_bounded(bytes, task_errors_max + dead_record_fields);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != dead_record_fields) {
            return core::errc::journal_corrupt;
        }
        dead_letter d;
        d.task = unpack_task_fields(obj.via.array.ptr);
        d.died_ms = obj.via.array.ptr[8].as<std::uint64_t>();
        return d;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

std::string encode_edit(const op_edit& e) {
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(edit_record_fields);
    pk.pack(edit_format_version);
    pk.pack(e.shard);
    pk.pack(e.seq);
    pk.pack(e.edited_ms);
    pk.pack(e.new_seq);
    pk.pack_bin(static_cast<std::uint32_t>(e.op_bytes.size()));
    pk.pack_bin_body(e.op_bytes.data(), static_cast<std::uint32_t>(e.op_bytes.size()));
    return out;
}

core::result<op_edit> decode_edit(std::span<const char> bytes) {
    try {
        auto oh = unpack_bounded(bytes, edit_record_fields);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != edit_record_fields) {
            return core::errc::journal_corrupt;
        }
        const msgpack::object* f = obj.via.array.ptr;
        if (f[0].as<std::uint8_t>() != edit_format_version || f[5].type != msgpack::type::BIN) {
            return core::errc::journal_corrupt;
        }
        op_edit e;
        e.shard = f[1].as<std::uint32_t>();
        e.seq = f[2].as<std::uint64_t>();
        e.edited_ms = f[3].as<std::uint64_t>();
        e.new_seq = f[4].as<std::uint64_t>();
        e.op_bytes.assign(f[5].via.bin.ptr, f[5].via.bin.size);
        return e;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

std::string encode_late(const late_apply& l) {
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(late_record_fields);
    pk.pack(late_format_version);
    pk.pack(l.shard);
    pk.pack(l.number);
    pk.pack(l.seq);
    pk.pack(l.applied_ms);
    pk.pack_bin(static_cast<std::uint32_t>(l.op_bytes.size()));
    pk.pack_bin_body(l.op_bytes.data(), static_cast<std::uint32_t>(l.op_bytes.size()));
    return out;
}

core::result<late_apply> decode_late(std::span<const char> bytes) {
    try {
        auto oh = unpack_bounded(bytes, late_record_fields);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != late_record_fields) {
            return core::errc::journal_corrupt;
        }
        const msgpack::object* f = obj.via.array.ptr;
        if (f[0].as<std::uint8_t>() != late_format_version || f[5].type != msgpack::type::BIN) {
            return core::errc::journal_corrupt;
        }
        late_apply l;
        l.shard = f[1].as<std::uint32_t>();
        l.number = f[2].as<std::uint64_t>();
        l.seq = f[3].as<std::uint64_t>();
        l.applied_ms = f[4].as<std::uint64_t>();
        l.op_bytes.assign(f[5].via.bin.ptr, f[5].via.bin.size);
        return l;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

std::string encode_idem(const appended& a, std::uint64_t wall_ms) {
    CAIRN_ASSERT(a.ts.size() == a.op_ids.size());
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(idem_record_fields);
    pk.pack(idem_format_version);
    pk.pack(wall_ms);
    pk.pack(a.first_seq);
    pk.pack(a.last_seq);
    pk.pack(a.ts);
    pk.pack(a.op_ids);
    return out;
}

core::result<idem_entry> decode_idem(std::span<const char> bytes) {
    try {
        // One append holds at most group_ops_max ops, which is configurable: bound the arrays
        // generously rather than by the current option.
        auto oh = unpack_bounded(bytes, std::size_t{1} << 24);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != idem_record_fields) {
            return core::errc::journal_corrupt;
        }
        const msgpack::object* f = obj.via.array.ptr;
        if (f[0].as<std::uint8_t>() != idem_format_version) return core::errc::journal_corrupt;
        idem_entry e;
        e.wall_ms = f[1].as<std::uint64_t>();
        e.result.first_seq = f[2].as<std::uint64_t>();
        e.result.last_seq = f[3].as<std::uint64_t>();
        e.result.ts = f[4].as<std::vector<std::uint64_t>>();
        e.result.op_ids = f[5].as<std::vector<std::uint64_t>>();
        if (e.result.ts.size() != e.result.op_ids.size()) return core::errc::journal_corrupt;
        if (e.result.last_seq < e.result.first_seq) return core::errc::journal_corrupt;
        if (e.result.last_seq - e.result.first_seq + 1 != e.result.ts.size()) return core::errc::journal_corrupt;
        return e;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

}  // namespace cairn::journal::detail
