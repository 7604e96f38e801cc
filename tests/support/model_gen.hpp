// rapidcheck generators of entity and cell writes over a small key space, with colliding timestamps
// (as client-supplied ts may), shared by the property tests of entities, cells and resharding.
#pragma once

#include "core/cells.hpp"
#include "core/document.hpp"
#include "core/entities.hpp"
#include "core/hlc.hpp"
#include "core/indexes.hpp"
#include "core/op.hpp"
#include "core/shard_map.hpp"

#include <rapidcheck.h>

#include <string>

namespace cairn::test {

// Few distinct timestamps: ties between puts, deletes and bodies are common.
inline rc::Gen<std::uint64_t> gen_colliding_ts() {
    return rc::gen::map(rc::gen::inRange<std::uint64_t>(0, 3), [](std::uint64_t ms) { return core::hlc_make(1'795'392'000'000 + ms, 0, 1); });
}

// users_by_company(company_id id, level int) on the users' BASE cell column, sharded by company.
inline core::index_def users_by_company() {
    return {"users_by_company", "users", {{"company_id", core::index_value_type::id, 0}, {"level", core::index_value_type::integer, 0}}, 0, "BASE"};
}

// Puts and deletes of ids 0..ids-1 (the id's first byte) of kinds entry and user; bodies of 1, 3 or 900
// bytes of `a` or `b` (900 is stored compressed).
inline rc::Gen<core::op> gen_entity_write(int ids = 5, char a = 'p', char b = 'q') {
    return rc::gen::exec([ids, a, b] {
        core::id16 id{};
        id[0] = static_cast<unsigned char>(*rc::gen::inRange(0, ids));
        core::entity_op e;
        e.entity_kind = *rc::gen::element<std::string>("entry", "user");
        e.id = std::string(core::id16_bytes(id));
        e.deleted = *rc::gen::element(false, false, true);
        if (!e.deleted) e.body = core::encode_body(std::string(*rc::gen::element<std::size_t>(1, 3, 900), *rc::gen::element(a, b)), 512);
        core::op o;
        o.ts = *gen_colliding_ts();
        o.body = std::move(e);
        return o;
    });
}

// Writes of cells of row keys 0..row_keys-1 (the key's last byte) in tables users and schools, columns
// BASE and status, ref_keys 1 and 2; bodies of 1, 2 or 700 bytes of `a` or `b` (700 stored compressed).
// Three in four users' BASE writes carry a users_by_company row of one of `companies` companies.
inline rc::Gen<core::op> gen_cell_write(int row_keys = 4, int companies = 6, char a = 'a', char b = 'b') {
    return rc::gen::exec([row_keys, companies, a, b] {
        core::id16 id{};
        id[15] = static_cast<unsigned char>(*rc::gen::inRange(0, row_keys));
        core::cell_op c;
        c.table = *rc::gen::element<std::string>("users", "schools");
        c.row_key = std::string(core::id16_bytes(id));
        c.column = *rc::gen::element<std::string>("BASE", "status");
        c.ref_key = *rc::gen::inRange<std::int64_t>(1, 3);
        const auto n = *rc::gen::element<std::size_t>(1, 2, 700);
        c.body = core::encode_body(std::string(n, *rc::gen::element(a, b)), 512);
        if (c.table == "users" && c.column == "BASE" && *rc::gen::inRange(0, 4) != 0) {
            core::id16 company{};
            company[0] = 0xc0;
            company[15] = static_cast<unsigned char>(*rc::gen::inRange(0, companies));
            const std::string company_bytes(core::id16_bytes(company));
            c.entries.push_back({"users_by_company", {company_bytes, *rc::gen::inRange<std::int64_t>(-1, 2)}, core::hash_bytes(company_bytes)});
        }
        core::op o;
        o.ts = *gen_colliding_ts();
        o.body = std::move(c);
        return o;
    });
}

}  // namespace cairn::test
