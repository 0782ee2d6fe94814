// Copying a SQLite database's tables into PostgreSQL's (storage/table_copy.hpp).
#include "storage/table_copy.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace glassbox::storage {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

// PostgreSQL's protocol counts a statement's parameters in 16 bits.
constexpr std::size_t kMaxParameters = 65535;

struct TargetColumn {
    std::string name;
    bool optional = false;   // nullable, with a default, an identity or generated
    bool generated = false;  // GENERATED ALWAYS AS (...): the target computes it
    bool identity_always = false;
    bool sequenced = false;  // an identity or serial column: its sequence follows the copied ids
};

// How one table is copied: the target's columns in INSERT order and what the source's SELECT
// reads for each.
struct CopyPlan {
    std::string table;
    std::vector<std::string> columns;
    std::vector<std::string> source_expressions;
    bool overriding = false;  // an identity GENERATED ALWAYS column is written
    std::vector<std::string> sequenced;
};

Error fail(const std::string& why) { return make_error(ErrorType::kInternal, why); }

Result<std::int64_t> count_rows(sql::Connection& db, const std::string& table) {
    auto st = db.prepare_once("SELECT COUNT(*) FROM " + quoted_identifier(table));
    if (!st) return st.error();
    auto count = st->first([](const sql::Row& row) { return row.int64(0); });
    if (!count) return count.error();
    return count->value_or(0);
}

Result<std::vector<std::string>> source_columns(sql::Connection& source, const std::string& table) {
    auto st = source.prepare_once("PRAGMA table_info(" + quoted_identifier(table) + ")");
    if (!st) return st.error();
    return st->collect([](const sql::Row& row) { return std::string(row.text(1)); });
}

// The columns of `table` in the target's current schema (the first of its search_path), in
// their order; none when the table is not there.
Result<std::vector<TargetColumn>> target_columns(sql::Connection& target,
                                                 const std::string& table) {
    auto st = target.prepare(
        "SELECT column_name, is_nullable = 'YES' OR column_default IS NOT NULL OR "
        "is_identity = 'YES' OR is_generated = 'ALWAYS', is_generated = 'ALWAYS', "
        "is_identity = 'YES' AND identity_generation = 'ALWAYS', "
        "is_identity = 'YES' OR column_default LIKE 'nextval(%' "
        "FROM information_schema.columns WHERE table_schema = current_schema() AND "
        "table_name = CAST(?1 AS TEXT) ORDER BY ordinal_position");
    if (!st) return st.error();
    st->bind(1, table);
    return st->collect([](const sql::Row& row) {
        return TargetColumn{std::string(row.text(0)), row.int64(1) != 0, row.int64(2) != 0,
                            row.int64(3) != 0, row.int64(4) != 0};
    });
}

Result<CopyPlan> plan_copy(sql::Connection& source, sql::Connection& target,
                           const TableSpec& spec) {
    auto from = source_columns(source, spec.name);
    if (!from) return from.error();
    if (from->empty()) return fail("no such table in the source");
    auto to = target_columns(target, spec.name);
    if (!to) return to.error();
    if (to->empty()) return fail("no such table on the target");
    const auto on_target = [&](const std::string& name) -> const TargetColumn* {
        const auto it = std::find_if(to->begin(), to->end(),
                                     [&](const TargetColumn& c) { return c.name == name; });
        return it == to->end() ? nullptr : &*it;
    };
    CopyPlan plan{spec.name, {}, {}, false, {}};
    for (const auto& name : *from) {
        if (on_target(name) == nullptr) return fail("no column " + name + " on the target");
        plan.columns.push_back(name);
        plan.source_expressions.push_back("src." + quoted_identifier(name));
    }
    for (const auto& derived : spec.derived) {
        const bool listed = std::find(from->begin(), from->end(), derived.name) != from->end();
        if (listed || on_target(derived.name) == nullptr) continue;
        plan.columns.push_back(derived.name);
        plan.source_expressions.push_back("(" + derived.sqlite_expression + ")");
    }
    for (const auto& column : *to) {
        const bool written =
            std::find(plan.columns.begin(), plan.columns.end(), column.name) != plan.columns.end();
        if (!written && !column.optional) {
            return fail("the target's column " + column.name +
                        " is NOT NULL without a default and the source has none");
        }
        if (written && column.identity_always) plan.overriding = true;
        if (column.sequenced && !column.generated) plan.sequenced.push_back(column.name);
    }
    return plan;
}

// SELECT of the plan's values and, last, one letter per value saying its SQLite type (i, r, t,
// b, n: integer, real, text, blob, null), so each is bound as what it is.
std::string source_select(const CopyPlan& plan) {
    std::string values;
    std::string types;
    for (const auto& expression : plan.source_expressions) {
        values += (values.empty() ? "" : ", ") + expression;
        types += (types.empty() ? "" : " || ") + ("substr(typeof(" + expression + "), 1, 1)");
    }
    return "SELECT " + values + ", " + types + " FROM " + quoted_identifier(plan.table) + " AS src";
}

std::string insert_sql(const CopyPlan& plan, std::size_t rows) {
    std::string sql = "INSERT INTO " + quoted_identifier(plan.table) + "(";
    for (std::size_t c = 0; c < plan.columns.size(); ++c)
        sql += (c == 0 ? "" : ", ") + quoted_identifier(plan.columns[c]);
    sql += plan.overriding ? ") OVERRIDING SYSTEM VALUE VALUES " : ") VALUES ";
    std::size_t parameter = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        sql += r == 0 ? "(" : ", (";
        for (std::size_t c = 0; c < plan.columns.size(); ++c)
            sql += (c == 0 ? "?" : ", ?") + std::to_string(++parameter);
        sql += ")";
    }
    return sql;
}

// Binds the source row's values as row `at` (0-based) of a multi-row INSERT of `width` columns.
Result<void> bind_row(sql::Statement& insert, const sql::Row& row, int width, std::size_t at) {
    const std::string_view types = row.text(width);
    if (types.size() != static_cast<std::size_t>(width))
        return fail("the source's value types were not read");
    const int first = static_cast<int>(at) * width + 1;
    for (int c = 0; c < width; ++c) {
        const int index = first + c;
        switch (types[static_cast<std::size_t>(c)]) {
            case 'i':
                insert.bind(index, row.int64(c));
                break;
            case 'r':
                insert.bind(index, row.real(c));
                break;
            case 't':
                insert.bind(index, row.text(c));
                break;
            case 'b':
                insert.bind_blob(index, row.blob(c));
                break;
            default:
                insert.bind_null(index);
                break;
        }
    }
    return {};
}

// Copies the plan's rows (`total` of them, as counted in the same snapshot); the rows the
// target's INSERTs reported.
Result<std::int64_t> copy_rows(sql::Connection& source, sql::Connection& target,
                               const CopyPlan& plan, std::int64_t total,
                               std::size_t per_statement) {
    const int width = static_cast<int>(plan.columns.size());
    const std::size_t per = std::clamp<std::size_t>(
        std::min(per_statement, kMaxParameters / plan.columns.size()), 1, kMaxParameters);
    auto read = source.prepare_once(source_select(plan));
    if (!read) return read.error();
    const std::string full_batch = insert_sql(plan, per);
    std::optional<sql::Statement> insert;
    std::size_t batch = 0;    // rows the current INSERT takes
    std::size_t filled = 0;   // rows bound into it so far
    std::int64_t done = 0;    // rows bound in all
    std::int64_t copied = 0;  // rows the target reported
    auto each = read->each([&](const sql::Row& row) -> Result<void> {
        if (done >= total) return fail("the source changed during the copy");
        if (filled == 0) {
            // Full batches share one cached statement; the last, shorter one is prepared once.
            batch = std::min<std::size_t>(per, static_cast<std::size_t>(total - done));
            auto made = batch == per ? target.prepare(full_batch)
                                     : target.prepare_once(insert_sql(plan, batch));
            if (!made) return made.error();
            insert.emplace(std::move(made).value());
        }
        if (auto r = bind_row(*insert, row, width, filled); !r) return r;
        ++filled;
        ++done;
        if (filled < batch) return {};
        if (auto r = insert->run(); !r) return r;
        copied += target.changes();
        insert.reset();
        filled = 0;
        return {};
    });
    if (!each) return each.error();
    if (filled != 0) return fail("the source changed during the copy");
    return copied;
}

// Each identity or serial column's sequence set to the column's largest copied value, so the
// target's own inserts go on after it.
Result<void> advance_sequences(sql::Connection& target, const CopyPlan& plan) {
    for (const auto& column : plan.sequenced) {
        const std::string c = quoted_identifier(column);
        auto st = target.prepare_once(
            "SELECT setval(pg_get_serial_sequence(CAST(?1 AS TEXT), CAST(?2 AS TEXT)), m) FROM "
            "(SELECT MAX(" +
            c + ") AS m FROM " + quoted_identifier(plan.table) + ") AS x WHERE m IS NOT NULL");
        if (!st) return st.error();
        st->bind(1, quoted_identifier(plan.table)).bind(2, column);
        if (auto r = st->run(); !r) return r;
    }
    return {};
}

Result<TableCount> copy_table(sql::Connection& source, sql::Connection& target,
                              const TableSpec& spec, const CopyOptions& options) {
    auto plan = plan_copy(source, target, spec);
    if (!plan) return plan.error();
    TableCount count{spec.name};
    auto source_rows = count_rows(source, spec.name);
    if (!source_rows) return source_rows.error();
    count.source_rows = *source_rows;
    if (spec.replace_target_rows) {
        if (auto r = target.exec("DELETE FROM " + quoted_identifier(spec.name)); !r)
            return r.error();
    } else {
        auto held = count_rows(target, spec.name);
        if (!held) return held.error();
        if (*held != 0) {
            return make_error(ErrorType::kInvalidRequest, "table " + spec.name +
                                                              " on the target already holds " +
                                                              std::to_string(*held) + " rows");
        }
    }
    if (options.before_table) {
        if (auto r = options.before_table(target, spec.name); !r) return r.error();
    }
    auto copied = copy_rows(source, target, *plan, count.source_rows, options.rows_per_statement);
    if (!copied) return copied.error();
    count.copied = *copied;
    if (auto r = advance_sequences(target, *plan); !r) return r.error();
    auto target_rows = count_rows(target, spec.name);
    if (!target_rows) return target_rows.error();
    count.target_rows = *target_rows;
    if (count.copied != count.source_rows || count.target_rows != count.source_rows) {
        return fail("the source holds " + std::to_string(count.source_rows) + " rows, " +
                    std::to_string(count.copied) + " were inserted and the target holds " +
                    std::to_string(count.target_rows));
    }
    return count;
}

}  // namespace

std::string quoted_identifier(std::string_view name) {
    std::string out = "\"";
    for (const char c : name) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

Result<std::vector<std::string>> sqlite_tables(sql::Connection& source) {
    auto st = source.prepare_once(
        "SELECT name, sql LIKE 'CREATE VIRTUAL TABLE%' FROM sqlite_master WHERE type = 'table' "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid");
    if (!st) return st.error();
    std::vector<std::pair<std::string, bool>> all;
    if (auto r = st->each([&](const sql::Row& row) {
            all.emplace_back(std::string(row.text(0)), row.int64(1) != 0);
        });
        !r) {
        return r.error();
    }
    // A virtual table's shadow tables are named after it (FTS5: <name>_data, _idx, _content, ...).
    std::vector<std::string> tables;
    for (const auto& [name, is_virtual] : all) {
        const bool shadow = std::any_of(all.begin(), all.end(), [&](const auto& other) {
            return other.second && name.starts_with(other.first + "_");
        });
        if (!is_virtual && !shadow) tables.push_back(name);
    }
    // Parents before children: each pass places the tables whose parents are placed (a cycle
    // keeps its order: the copy is one transaction, and PostgreSQL checks a foreign key per
    // statement, so such a schema could not be copied in any order anyway).
    std::vector<std::pair<std::string, std::set<std::string>>> pending;
    for (const auto& table : tables) {
        auto fk = source.prepare_once("PRAGMA foreign_key_list(" + quoted_identifier(table) + ")");
        if (!fk) return fk.error();
        std::set<std::string> parents;
        if (auto r = fk->each([&](const sql::Row& row) {
                if (std::string parent(row.text(2)); parent != table) parents.insert(parent);
            });
            !r) {
            return r.error();
        }
        pending.emplace_back(table, std::move(parents));
    }
    std::vector<std::string> ordered;
    while (!pending.empty()) {
        const auto placed = [&](const std::string& t) {
            return std::find(ordered.begin(), ordered.end(), t) != ordered.end() ||
                   std::find(tables.begin(), tables.end(), t) == tables.end();
        };
        auto ready = std::find_if(pending.begin(), pending.end(), [&](const auto& p) {
            return std::all_of(p.second.begin(), p.second.end(), placed);
        });
        if (ready == pending.end()) ready = pending.begin();
        ordered.push_back(ready->first);
        pending.erase(ready);
    }
    return ordered;
}

Result<std::vector<TableCount>> copy_tables(sql::Connection& source, sql::Connection& target,
                                            const std::vector<TableSpec>& tables,
                                            const CopyOptions& options) {
    if (source.dialect() != sql::Dialect::kSqlite || target.dialect() != sql::Dialect::kPostgres)
        return make_error(ErrorType::kInternal, "copy_tables: from SQLite to PostgreSQL only");
    if (!target.in_transaction())
        return make_error(ErrorType::kInternal,
                          "copy_tables: the target's transaction is the caller's");
    // One snapshot of the source for every table: a writer beside it changes nothing copied.
    const sql::ReadScope snapshot(source);
    std::vector<TableCount> counts;
    for (const auto& spec : tables) {
        auto count = copy_table(source, target, spec, options);
        if (!count) {
            // Named with its table, its type kept (an unreachable server stays kStoreUnavailable).
            base::Error error = std::move(count).error();
            error.message = "copying table " + spec.name + ": " + error.message;
            return error;
        }
        counts.push_back(std::move(*count));
    }
    return counts;
}

}  // namespace glassbox::storage
