// Row feeds on both engines: SQLite's virtual table, PostgreSQL's unnest of bound arrays.
#include "storage/feed_rows.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include "storage/pg_connection.hpp"
#include "storage/sqlite_connection.hpp"

namespace glassbox::storage::sql {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

constexpr std::array<std::string_view, kRowFeedColumns + kRowFeedTextColumns> kColumnNames = {
    "c0", "c1", "c2", "c3", "c4", "t0", "t1"};

bool is_word_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `word` appears in `sql` as a whole identifier.
bool names(std::string_view sql, std::string_view word) {
    for (auto at = sql.find(word); at != std::string_view::npos; at = sql.find(word, at + 1)) {
        const bool starts = at == 0 || !is_word_char(sql[at - 1]);
        const auto end = at + word.size();
        if (starts && (end == sql.size() || !is_word_char(sql[end]))) return true;
    }
    return false;
}

// `FROM <feed>` becomes `FROM unnest(?1::bigint[], …) AS <feed>(c0, …)` over the columns the
// statement names, in the order of kColumnNames; `used` gets their indexes.
Result<std::string> unnest_sql(const std::string& sql, const std::string& feed_name,
                               std::vector<std::size_t>& used) {
    const std::string from = "FROM " + feed_name;
    const auto at = sql.find(from);
    if (at == std::string::npos || names(sql.substr(at + from.size()), feed_name)) {
        return make_error(ErrorType::kInternal,
                          "row feed: the statement must read " + feed_name + " once");
    }
    std::string args;
    std::string columns;
    for (std::size_t c = 0; c < kColumnNames.size(); ++c) {
        if (!names(sql, kColumnNames[c])) continue;
        used.push_back(c);
        if (!args.empty()) {
            args += ", ";
            columns += ", ";
        }
        args +=
            "?" + std::to_string(used.size()) + (c < kRowFeedColumns ? "::bigint[]" : "::text[]");
        columns += kColumnNames[c];
    }
    if (used.empty())
        return make_error(ErrorType::kInternal, "row feed: the statement reads no column");
    return sql.substr(0, at) + "FROM unnest(" + args + ") AS " + feed_name + "(" + columns + ")" +
           sql.substr(at + from.size());
}

// One column of rows [first, last) as an array literal.
void column_array(const Int64RowFeed& feed, std::size_t column, std::size_t first, std::size_t last,
                  std::string& out) {
    out.clear();
    out += '{';
    for (std::size_t at = first; at < last; ++at) {
        if (at != first) out += ',';
        if (column < kRowFeedColumns) {
            std::array<char, 24> digits{};
            const auto value = feed.rows[at * feed.stride + feed.column_at[column]];
            const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
            out.append(digits.data(), end);
        } else if (feed.texts == nullptr) {
            out += "NULL";
        } else {
            append_text_array_element(
                out, feed.texts[at * kRowFeedTextColumns + (column - kRowFeedColumns)]);
        }
    }
    out += '}';
}

Result<std::int64_t> run_postgres(Connection& connection, const std::string& feed_name,
                                  const std::string& sql, const Int64RowFeed& feed,
                                  std::size_t slice) {
    std::vector<std::size_t> used;
    auto text = unnest_sql(sql, feed_name, used);
    if (!text) return text.error();
    auto statement = connection.prepare(*text);
    if (!statement) return statement.error();
    std::vector<std::string> arrays(used.size());
    std::int64_t changed = 0;
    for (std::size_t first = 0; first < feed.count; first += slice) {
        const std::size_t last = std::min(feed.count, first + slice);
        for (std::size_t k = 0; k < used.size(); ++k) {
            column_array(feed, used[k], first, last, arrays[k]);
            statement->bind_static(static_cast<int>(k + 1), arrays[k]);
        }
        if (auto r = statement->run(); !r) return r.error();
        changed += connection.changes();
        statement->reset();
    }
    return changed;
}

// A statement that only appends the feed's rows to a table: `INSERT INTO t(a, b) SELECT c0, t0
// FROM <feed>`, nothing before or after. Such a statement is run as a COPY of the rows instead.
struct PlainInsert {
    std::string target;                // "t(a, b)"
    std::vector<std::size_t> columns;  // the feed's column (index in kColumnNames) of each
};

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
}

std::optional<PlainInsert> plain_insert(std::string_view sql, const std::string& feed_name) {
    constexpr std::string_view kInsert = "INSERT INTO ";
    constexpr std::string_view kSelect = ") SELECT ";
    const std::string from = " FROM " + feed_name;
    const auto select = sql.find(kSelect);
    if (!sql.starts_with(kInsert) || !sql.ends_with(from) || select == std::string_view::npos)
        return std::nullopt;
    PlainInsert plain{std::string(sql.substr(kInsert.size(), select + 1 - kInsert.size())), {}};
    const auto open = plain.target.find('(');
    if (open == std::string::npos ||
        plain.target.find_first_of("();", open + 1) + 1 != plain.target.size())
        return std::nullopt;
    std::string_view list = sql.substr(select + kSelect.size());
    list.remove_suffix(from.size());
    for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const auto name = trimmed(list.substr(at, comma - at));
        const auto known = std::find(kColumnNames.begin(), kColumnNames.end(), name);
        if (known == kColumnNames.end()) return std::nullopt;
        plain.columns.push_back(static_cast<std::size_t>(known - kColumnNames.begin()));
        at = comma + 1;
    }
    const auto targets = std::count(plain.target.begin(), plain.target.end(), ',') + 1;
    if (static_cast<std::size_t>(targets) != plain.columns.size()) return std::nullopt;
    return plain;
}

// PostgreSQL: the feed's rows by COPY (binary), a slice at a time. An INSERT ... SELECT from
// unnested arrays costs the server a text parse of every value and a heap WAL record per row;
// COPY neither (bench_graph --postgres: a staged load's writes took about half the time).
Result<std::int64_t> copy_rows(PgConnection& connection, const PlainInsert& plain,
                               const Int64RowFeed& feed, std::size_t slice) {
    std::int64_t copied = 0;
    const auto fields = static_cast<std::int16_t>(plain.columns.size());
    for (std::size_t first = 0; first < feed.count; first += slice) {
        const std::size_t last = std::min(feed.count, first + slice);
        PgCopyRows rows;
        for (std::size_t at = first; at < last; ++at) {
            rows.begin_row(fields);
            for (const std::size_t column : plain.columns) {
                if (column < kRowFeedColumns) {
                    rows.add_int64(feed.rows[at * feed.stride + feed.column_at[column]]);
                } else if (feed.texts == nullptr) {
                    rows.add_null();
                } else if (!rows.add_text(
                               feed.texts[at * kRowFeedTextColumns + (column - kRowFeedColumns)])) {
                    return make_error(ErrorType::kInvalidRequest,
                                      connection.label() +
                                          ": a text holds a NUL byte, which PostgreSQL text "
                                          "cannot store");
                }
            }
        }
        auto n = connection.copy_in(plain.target, rows);
        if (!n) return n.error();
        copied += *n;
    }
    return copied;
}

}  // namespace

void append_text_array_element(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
}

Result<void> register_row_feed(Connection& connection, const std::string& feed_name) {
    if (auto* lite = SqliteConnection::of(connection))
        return storage::register_row_feed(lite->database(), feed_name);
    return {};
}

Result<std::int64_t> run_with_row_feed(Connection& connection, const std::string& feed_name,
                                       const std::string& sql, const Int64RowFeed& feed,
                                       std::size_t postgres_slice) {
    if (auto* lite = SqliteConnection::of(connection))
        return storage::run_with_row_feed(lite->database(), sql, feed);
    if (feed.count == 0) return std::int64_t{0};
    if (auto* pg = PgConnection::of(connection)) {
        if (const auto plain = plain_insert(sql, feed_name))
            return copy_rows(*pg, *plain, feed, std::max<std::size_t>(postgres_slice, 1));
    }
    return run_postgres(connection, feed_name, sql, feed, std::max<std::size_t>(postgres_slice, 1));
}

}  // namespace glassbox::storage::sql
