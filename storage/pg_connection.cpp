// PostgreSQL behind sql::Connection (see pg_connection.hpp): libpq, results in text format.
#include "storage/pg_connection.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "storage/pg_dsn.hpp"

namespace glassbox::storage {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

// pg_type.oid of the types read differently from their text (catalog/pg_type_d.h).
constexpr Oid kPgBoolOid = 16;
constexpr Oid kPgByteaOid = 17;
// The protocol counts parameters in 16 bits; a field holds at most 1 GiB.
constexpr int kPgMaxParameters = 65535;
constexpr std::size_t kPgMaxFieldBytes = std::size_t{1} << 30;
// The SQL quoted in an error message is cut to this many bytes.
constexpr std::size_t kPgQuotedSqlBytes = 200;
// A read transaction (TransactionKind::kRead).
constexpr const char* kReadBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

bool pg_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A character of an unquoted identifier (PostgreSQL allows `$` after the first character and
// any non-ASCII letter).
bool pg_word_char(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return pg_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '$' || u >= 0x80;
}

// The end of the quoted run opened at `at`: a doubled quote stays inside, and so does a quote
// after a backslash when `backslashes` (E'...' strings).
std::size_t pg_quoted_end(std::string_view sql, std::size_t at, char quote, bool backslashes) {
    for (std::size_t i = at + 1; i < sql.size(); ++i) {
        if (backslashes && sql[i] == '\\') {
            ++i;
        } else if (sql[i] == quote) {
            if (i + 1 < sql.size() && sql[i + 1] == quote) {
                ++i;
            } else {
                return i + 1;
            }
        }
    }
    return sql.size();
}

// The end of the /* ... */ comment opened at `at` (PostgreSQL's block comments nest).
std::size_t pg_block_comment_end(std::string_view sql, std::size_t at) {
    int depth = 0;
    std::size_t i = at;
    while (i + 1 < sql.size()) {
        if (sql[i] == '/' && sql[i + 1] == '*') {
            ++depth;
            i += 2;
        } else if (sql[i] == '*' && sql[i + 1] == '/') {
            i += 2;
            if (--depth == 0) return i;
        } else {
            ++i;
        }
    }
    return sql.size();
}

// The end of the $tag$...$tag$ string opened at `at`, or `at` when no dollar quote opens there
// (`$1` is a parameter: a tag never starts with a digit).
std::size_t pg_dollar_quoted_end(std::string_view sql, std::size_t at) {
    std::size_t i = at + 1;
    if (i < sql.size() && pg_digit(sql[i])) return at;
    while (i < sql.size() && sql[i] != '$' && pg_word_char(sql[i])) ++i;
    if (i >= sql.size() || sql[i] != '$') return at;
    const std::string_view tag = sql.substr(at, i - at + 1);
    const std::size_t close = sql.find(tag, i + 1);
    return close == std::string_view::npos ? sql.size() : close + tag.size();
}

// The end of the literal, quoted identifier or comment that starts at `at`, or `at` when none
// does: placeholders inside them are text.
std::size_t pg_skipped_end(std::string_view sql, std::size_t at) {
    const char c = sql[at];
    const char next = at + 1 < sql.size() ? sql[at + 1] : '\0';
    const bool after_word = at > 0 && pg_word_char(sql[at - 1]);
    if (c == '\'') {
        const bool escape_string = after_word && (sql[at - 1] == 'E' || sql[at - 1] == 'e') &&
                                   !(at > 1 && pg_word_char(sql[at - 2]));
        return pg_quoted_end(sql, at, '\'', escape_string);
    }
    if (c == '"') return pg_quoted_end(sql, at, '"', false);
    if (c == '-' && next == '-') {
        const std::size_t end = sql.find('\n', at);
        return end == std::string_view::npos ? sql.size() : end;
    }
    if (c == '/' && next == '*') return pg_block_comment_end(sql, at);
    if (c == '$' && !after_word) return pg_dollar_quoted_end(sql, at);
    return at;
}

// Whitespace runs (a multi-line libpq message, SQL over lines) as single spaces, trimmed.
std::string pg_one_line(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool space = false;
    for (const char c : text) {
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out.push_back(' ');
        space = false;
        out.push_back(c);
    }
    return out;
}

// SQL for an error message: one line, cut (at a character boundary) past kPgQuotedSqlBytes.
std::string pg_quoted_sql(std::string_view sql) {
    std::string line = pg_one_line(sql);
    if (line.size() <= kPgQuotedSqlBytes) return line;
    std::size_t cut = kPgQuotedSqlBytes;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
    return line + "...";
}

void pg_replace_all(std::string& text, std::string_view what, std::string_view with) {
    if (what.empty()) return;
    for (std::size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + with.size())) {
        text.replace(at, what.size(), with);
    }
}

// Why libpq cannot read `dsn`, or nullopt when it can.
std::optional<std::string> pg_unreadable_dsn(const std::string& dsn) {
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), &error);
    std::optional<std::string> why;
    if (parsed == nullptr) why = error != nullptr ? pg_one_line(error) : "out of memory";
    PQconninfoFree(parsed);
    if (error != nullptr) PQfreemem(error);
    return why;
}

// A NUMERIC, float or integer's text as an integer: the integer part (as SQLite's CAST), clamped
// to the int64 range; 0 when it is not a number.
std::int64_t pg_parse_int64(std::string_view text) noexcept {
    const char* end = text.data() + text.size();
    std::int64_t value = 0;
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (error == std::errc() && (stop == end || *stop == '.')) return value;
    double real = 0;
    if (std::from_chars(text.data(), end, real).ec != std::errc() || std::isnan(real)) return 0;
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (real >= kTwoTo63) return std::numeric_limits<std::int64_t>::max();
    if (real < -kTwoTo63) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(real);
}

void pg_ignore_notice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

PgSql postgres_placeholders(std::string_view sql) {
    PgSql out;
    out.text.reserve(sql.size() + 8);
    std::size_t i = 0;
    while (i < sql.size()) {
        if (const std::size_t end = pg_skipped_end(sql, i); end != i) {
            out.text.append(sql.substr(i, end - i));
            i = end;
            continue;
        }
        if (sql[i] != '?') {
            out.text.push_back(sql[i++]);
            continue;
        }
        std::size_t digits_end = i + 1;
        while (digits_end < sql.size() && pg_digit(sql[digits_end])) ++digits_end;
        int number = out.parameters + 1;
        if (digits_end > i + 1) {
            const auto parsed =
                std::from_chars(sql.data() + i + 1, sql.data() + digits_end, number);
            // Past the protocol's limit: left as `$N` for the server to reject.
            if (parsed.ec != std::errc() || number > kPgMaxParameters) number = -1;
        }
        if (number < 0) {
            out.text.append("$").append(sql.substr(i + 1, digits_end - i - 1));
        } else {
            out.parameters = std::max(out.parameters, number);
            out.text.append("$").append(std::to_string(number));
        }
        i = digits_end;
    }
    return out;
}

// ---- Statement ---------------------------------------------------------------------------------

class PgConnection::Impl final : public sql::StatementImpl {
public:
    // `name`: of the server-side prepared statement; empty for a one-use statement (executed
    // with PQexecParams).
    Impl(PgConnection& connection, std::string source, std::string name)
        : connection_(connection),
          source_(std::move(source)),
          sql_(postgres_placeholders(source_)),
          name_(std::move(name)),
          parameters_(static_cast<std::size_t>(sql_.parameters)) {}

    // Prepares the named statement on the server unless it is there already (this connection
    // generation).
    Result<void> prepare_on_server();

    void bind_text(int index, std::string_view text) override;
    void bind_blob(int index, std::span<const std::byte> bytes) override;
    void bind_int64(int index, std::int64_t value) override;
    void bind_real(int index, double value) override;
    void bind_null(int index) override;
    Result<bool> step() override;
    void reset() noexcept override;

    bool is_null(int column) const noexcept override;
    std::int64_t int64(int column) const noexcept override;
    double real(int column) const noexcept override;
    std::string_view text(int column) const noexcept override { return bytes(column); }
    std::span<const std::byte> blob(int column) const noexcept override {
        const std::string_view b = bytes(column);
        return std::as_bytes(std::span(b.data(), b.size()));
    }

private:
    struct Parameter {
        std::string value;
        bool null = true;  // unbound parameters are NULL, as on SQLite
        bool binary = false;
        bool holds_nul = false;
    };

    Parameter* parameter(int index);
    void set_text_value(int index, std::string value);
    Result<void> check_parameters() const;
    Result<void> execute();
    bool in_row(int column) const noexcept;
    // The column's value as bytes: bytea decoded, everything else its text.
    std::string_view bytes(int column) const noexcept;

    PgConnection& connection_;
    std::string source_;  // as the caller wrote it, for messages
    PgSql sql_;
    std::string name_;
    std::uint64_t prepared_generation_ = 0;
    std::vector<Parameter> parameters_;
    std::optional<base::Error> bind_error_;
    PgResult result_;
    int rows_ = 0;
    int row_ = -1;
    bool executed_ = false;
    // bytea values of the current row, decoded when first read.
    mutable std::vector<std::optional<std::string>> decoded_;
};

Result<void> PgConnection::Impl::prepare_on_server() {
    if (name_.empty() || prepared_generation_ == connection_.generation_) return {};
    auto result = connection_.checked(
        PQprepare(connection_.connection_.get(), name_.c_str(), sql_.text.c_str(), 0, nullptr),
        source_);
    if (!result) return result.error();
    prepared_generation_ = connection_.generation_;
    return {};
}

// A binding makes the next step execute again.
PgConnection::Impl::Parameter* PgConnection::Impl::parameter(int index) {
    executed_ = false;
    result_.reset();
    if (index < 1 || index > sql_.parameters) {
        bind_error_ = make_error(ErrorType::kInternal, connection_.label() + ": no parameter ?" +
                                                           std::to_string(index) +
                                                           " in: " + pg_quoted_sql(source_));
        return nullptr;
    }
    return &parameters_[static_cast<std::size_t>(index - 1)];
}

void PgConnection::Impl::set_text_value(int index, std::string value) {
    if (Parameter* p = parameter(index)) *p = Parameter{std::move(value), false, false, false};
}

void PgConnection::Impl::bind_text(int index, std::string_view text) {
    Parameter* p = parameter(index);
    if (p == nullptr) return;
    // PostgreSQL text cannot hold NUL (a text-format value ends at one): refused at the step.
    if (text.find('\0') != std::string_view::npos) {
        *p = Parameter{{}, false, false, true};
        return;
    }
    *p = Parameter{std::string(text), false, false, false};
}

void PgConnection::Impl::bind_blob(int index, std::span<const std::byte> bytes) {
    Parameter* p = parameter(index);
    if (p == nullptr) return;
    *p = Parameter{std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), false,
                   true, false};
}

void PgConnection::Impl::bind_int64(int index, std::int64_t value) {
    set_text_value(index, std::to_string(value));
}

void PgConnection::Impl::bind_real(int index, double value) {
    if (std::isnan(value)) return set_text_value(index, "NaN");
    if (std::isinf(value)) return set_text_value(index, value > 0 ? "Infinity" : "-Infinity");
    char buffer[32];
    const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
    set_text_value(index, std::string(buffer, written.ptr));
}

void PgConnection::Impl::bind_null(int index) {
    if (Parameter* p = parameter(index)) *p = Parameter{};
}

Result<void> PgConnection::Impl::check_parameters() const {
    if (bind_error_) return *bind_error_;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const std::string name = "parameter ?" + std::to_string(i + 1);
        if (parameters_[i].holds_nul) {
            return make_error(
                ErrorType::kInvalidRequest,
                connection_.label() + ": " + name +
                    " is text holding a NUL byte, which PostgreSQL text cannot store");
        }
        if (parameters_[i].value.size() > kPgMaxFieldBytes) {
            return make_error(ErrorType::kInvalidRequest,
                              connection_.label() + ": " + name +
                                  " is larger than PostgreSQL's field limit of 1 GiB");
        }
    }
    return {};
}

Result<void> PgConnection::Impl::execute() {
    if (auto valid = check_parameters(); !valid) return valid;
    if (auto ready = connection_.usable(); !ready) return ready;
    if (auto prepared = prepare_on_server(); !prepared) return prepared;
    const std::size_t count = parameters_.size();
    std::vector<const char*> values(count);
    std::vector<int> lengths(count);
    std::vector<int> formats(count);
    for (std::size_t i = 0; i < count; ++i) {
        const Parameter& p = parameters_[i];
        values[i] = p.null ? nullptr : p.value.c_str();
        lengths[i] = static_cast<int>(p.value.size());
        formats[i] = p.binary ? 1 : 0;
    }
    const int n = static_cast<int>(count);
    // PQsendQuery* when the statement carries a deferred BEGIN, PQexec* otherwise.
    const auto send = [&](PGconn* connection) {
        return name_.empty() ? PQsendQueryParams(connection, sql_.text.c_str(), n, nullptr,
                                                 values.data(), lengths.data(), formats.data(), 0)
                             : PQsendQueryPrepared(connection, name_.c_str(), n, values.data(),
                                                   lengths.data(), formats.data(), 0);
    };
    PGconn* connection = connection_.connection_.get();
    auto result =
        connection_.begin_deferred_
            ? connection_.run_after_begin(send, source_)
            : connection_.checked(
                  name_.empty() ? PQexecParams(connection, sql_.text.c_str(), n, nullptr,
                                               values.data(), lengths.data(), formats.data(), 0)
                                : PQexecPrepared(connection, name_.c_str(), n, values.data(),
                                                 lengths.data(), formats.data(), 0),
                  source_);
    if (!result) return result.error();
    result_ = std::move(*result);
    rows_ = PQresultStatus(result_.get()) == PGRES_TUPLES_OK ? PQntuples(result_.get()) : 0;
    row_ = -1;
    connection_.note_changes(result_.get());
    return {};
}

Result<bool> PgConnection::Impl::step() {
    if (!executed_) {
        if (auto ran = execute(); !ran) return ran.error();
        executed_ = true;
    }
    decoded_.clear();
    if (row_ < rows_) ++row_;
    return row_ < rows_;
}

void PgConnection::Impl::reset() noexcept {
    executed_ = false;
    result_.reset();
    rows_ = 0;
    row_ = -1;
    decoded_.clear();
    bind_error_.reset();
}

bool PgConnection::Impl::in_row(int column) const noexcept {
    return result_ && row_ >= 0 && row_ < rows_ && column >= 0 && column < PQnfields(result_.get());
}

bool PgConnection::Impl::is_null(int column) const noexcept {
    return !in_row(column) || PQgetisnull(result_.get(), row_, column) != 0;
}

std::int64_t PgConnection::Impl::int64(int column) const noexcept {
    if (is_null(column)) return 0;
    const char* value = PQgetvalue(result_.get(), row_, column);
    // A boolean (`SELECT EXISTS (...)`) reads as 1 or 0, as SQLite's do.
    if (PQftype(result_.get(), column) == kPgBoolOid) return value[0] == 't' ? 1 : 0;
    const auto length = static_cast<std::size_t>(PQgetlength(result_.get(), row_, column));
    return pg_parse_int64(std::string_view(value, length));
}

double PgConnection::Impl::real(int column) const noexcept {
    if (is_null(column)) return 0;
    const char* value = PQgetvalue(result_.get(), row_, column);
    if (PQftype(result_.get(), column) == kPgBoolOid) return value[0] == 't' ? 1 : 0;
    double out = 0;
    // from_chars: the C locale's decimal point whatever the process's locale is.
    const auto length = static_cast<std::size_t>(PQgetlength(result_.get(), row_, column));
    if (std::from_chars(value, value + length, out).ec != std::errc()) return 0;
    return out;
}

std::string_view PgConnection::Impl::bytes(int column) const noexcept {
    if (is_null(column)) return {};
    const char* value = PQgetvalue(result_.get(), row_, column);
    const auto length = static_cast<std::size_t>(PQgetlength(result_.get(), row_, column));
    if (PQftype(result_.get(), column) != kPgByteaOid) return {value, length};
    // bytea's text form (`\x` hex, or the older escape form) decoded once per row and column;
    // the buffer lives until the next step or reset.
    decoded_.resize(static_cast<std::size_t>(PQnfields(result_.get())));
    auto& slot = decoded_[static_cast<std::size_t>(column)];
    if (!slot) {
        std::size_t size = 0;
        unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(value), &size);
        if (raw == nullptr) return {};
        slot.emplace(reinterpret_cast<const char*>(raw), size);
        PQfreemem(raw);
    }
    return *slot;
}

// ---- COPY rows ---------------------------------------------------------------------------------

namespace {

// `value` big-endian, as COPY's binary format has every integer.
template <typename Int>
void pg_put_big_endian(std::string& out, Int value) {
    auto u = static_cast<std::make_unsigned_t<Int>>(value);
    char bytes[sizeof(Int)];
    for (std::size_t i = sizeof(Int); i-- > 0; u = static_cast<decltype(u)>(u >> 8))
        bytes[i] = static_cast<char>(u & 0xFF);
    out.append(bytes, sizeof(Int));
}

}  // namespace

PgCopyRows::PgCopyRows() {
    // The signature, then 32-bit flags (no OIDs) and header-extension length, both 0.
    static constexpr char kSignature[] = "PGCOPY\n\xff\r\n";
    bytes_.append(kSignature, sizeof kSignature);  // with its terminating NUL, which is part of it
    pg_put_big_endian(bytes_, std::int32_t{0});
    pg_put_big_endian(bytes_, std::int32_t{0});
}

void PgCopyRows::begin_row(std::int16_t fields) {
    pg_put_big_endian(bytes_, fields);
    ++rows_;
}

void PgCopyRows::add_int64(std::int64_t value) {
    pg_put_big_endian(bytes_, std::int32_t{8});
    pg_put_big_endian(bytes_, value);
}

bool PgCopyRows::add_text(std::string_view text) {
    if (text.find('\0') != std::string_view::npos || text.size() > kPgMaxFieldBytes) return false;
    pg_put_big_endian(bytes_, static_cast<std::int32_t>(text.size()));
    bytes_.append(text);
    return true;
}

void PgCopyRows::add_null() { pg_put_big_endian(bytes_, std::int32_t{-1}); }

std::string_view PgCopyRows::finish() {
    if (!finished_) pg_put_big_endian(bytes_, std::int16_t{-1});
    finished_ = true;
    return bytes_;
}

// ---- Connection --------------------------------------------------------------------------------

void PgConnection::Closer::operator()(pg_conn* connection) const noexcept { PQfinish(connection); }

void PgConnection::ResultClear::operator()(pg_result* result) const noexcept { PQclear(result); }

Result<std::unique_ptr<PgConnection>> PgConnection::open(const PgOptions& options) {
    if (auto why = pg_unreadable_dsn(options.dsn)) {
        // libpq quotes the part it could not read, which may be a password.
        const bool quotable =
            masked_dsn(options.dsn) == options.dsn && options.dsn.find('@') == std::string::npos;
        return make_error(ErrorType::kInvalidRequest,
                          options.label + ": the PostgreSQL connection string cannot be read" +
                              (quotable ? ": " + *why : std::string()));
    }
    const std::string timeout =
        std::to_string(std::max<std::int64_t>(options.connect_timeout.count(), 1));
    // Keywords are applied in order, the DSN expanded where `dbname` stands: the DSN may name
    // another application_name; connect_timeout and client_encoding are ours.
    const std::string search_path = "-c search_path=" + options.search_path;
    const bool has_path = !options.search_path.empty();
    const char* const keywords[] = {"application_name",
                                    "dbname",
                                    "connect_timeout",
                                    "client_encoding",
                                    has_path ? "options" : nullptr,
                                    nullptr};
    const char* const values[] = {"glassbox",
                                  options.dsn.c_str(),
                                  timeout.c_str(),
                                  "UTF8",
                                  has_path ? search_path.c_str() : nullptr,
                                  nullptr};
    auto connection =
        std::make_unique<PgConnection>(Token{}, options, PQconnectdbParams(keywords, values, 1));
    PGconn* handle = connection->connection_.get();
    if (handle == nullptr) return connection->unavailable("libpq is out of memory");
    PQsetNoticeProcessor(handle, pg_ignore_notice, nullptr);
    if (PQstatus(handle) != CONNECTION_OK)
        return connection->unavailable(connection->libpq_message());
    return connection;
}

PgConnection::PgConnection(Token, PgOptions options, pg_conn* connection)
    : options_(std::move(options)), server_(dsn_server(options_.dsn)), connection_(connection) {}

// The cached statements go before the connection that made them.
PgConnection::~PgConnection() { cached_.clear(); }

Result<void> PgConnection::usable() {
    settle();
    PGconn* connection = connection_.get();
    if (PQstatus(connection) != CONNECTION_BAD) return {};
    // A read transaction whose BEGIN was not sent yet lost nothing.
    if (transaction_open_ && !begin_deferred_) {
        return unavailable(
            "the connection was lost inside a transaction, which the server rolled back; roll "
            "back before going on");
    }
    // Backoff between re-connections: 100 ms, doubling up to 5 s.
    constexpr std::chrono::milliseconds kMinRetry{100};
    constexpr std::chrono::milliseconds kMaxRetry{5'000};
    const auto now = std::chrono::steady_clock::now();
    if (now < retry_at_) return unavailable(last_failure_ + " (retrying shortly)");
    PQreset(connection);
    if (PQstatus(connection) != CONNECTION_OK) {
        retry_wait_ = std::clamp(retry_wait_ * 2, kMinRetry, kMaxRetry);
        retry_at_ = std::chrono::steady_clock::now() + retry_wait_;
        last_failure_ = libpq_message();
        return unavailable(last_failure_);
    }
    retry_wait_ = std::chrono::milliseconds{0};
    retry_at_ = {};
    // The server forgot this session's prepared statements.
    ++generation_;
    changes_ = 0;
    return {};
}

void PgConnection::settle() noexcept {
    if (!rollback_in_flight_) return;
    rollback_in_flight_ = false;
    while (PGresult* answer = PQgetResult(connection_.get())) PQclear(answer);
}

Result<PgConnection::PgResult> PgConnection::run_after_begin(
    const std::function<int(pg_conn*)>& send, std::string_view sql) {
    PGconn* connection = connection_.get();
    begin_deferred_ = false;
    if (PQenterPipelineMode(connection) != 1) {
        // Not idle (cannot happen after usable()): the BEGIN on its own.
        if (auto begun = checked(PQexec(connection, kReadBegin), kReadBegin); !begun) {
            transaction_open_ = false;
            return begun.error();
        }
        if (send(connection) != 1) return unavailable(libpq_message());
        PgResult last;
        while (PGresult* next = PQgetResult(connection)) last.reset(next);
        return checked(last.release(), sql);
    }
    const bool sent =
        PQsendQueryParams(connection, kReadBegin, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1 &&
        send(connection) == 1 && PQpipelineSync(connection) == 1;
    // Each query's result (a NULL after each), then the sync's; two NULLs in a row: nothing
    // more will come (a lost connection).
    std::vector<PgResult> results;
    if (sent) {
        int nulls = 0;
        while (nulls < 2) {
            PGresult* next = PQgetResult(connection);
            if (next == nullptr) {
                ++nulls;
                continue;
            }
            nulls = 0;
            if (PQresultStatus(next) == PGRES_PIPELINE_SYNC) {
                PQclear(next);
                break;
            }
            results.emplace_back(next);
        }
    }
    const std::string said = sent ? std::string() : libpq_message();
    (void)PQexitPipelineMode(connection);
    // Without a BEGIN that succeeded there is no transaction (as when begin() fails), and the
    // next statement may re-connect; a connection lost after it lost the transaction.
    if (results.empty() || PQresultStatus(results[0].get()) != PGRES_COMMAND_OK) {
        transaction_open_ = false;
        if (!sent) return unavailable(said);
        if (results.empty() || PQstatus(connection) == CONNECTION_BAD)
            return unavailable("connection lost: " + libpq_message());
        return failed(results[0].get(), kReadBegin);
    }
    if (results.size() != 2) return unavailable("connection lost: " + libpq_message());
    return checked(results[1].release(), sql);
}

Result<PgConnection::PgResult> PgConnection::checked(pg_result* raw, std::string_view sql) {
    PgResult result(raw);
    if (PQstatus(connection_.get()) == CONNECTION_BAD) {
        return unavailable("connection lost: " + libpq_message());
    }
    switch (PQresultStatus(raw)) {
        case PGRES_COMMAND_OK:
        case PGRES_TUPLES_OK:
        case PGRES_EMPTY_QUERY:
            return result;
        default:
            return failed(raw, sql);
    }
}

void PgConnection::note_changes(pg_result* result) noexcept {
    const std::string_view command = PQcmdStatus(result);
    for (const std::string_view counted : {"INSERT ", "UPDATE ", "DELETE ", "MERGE "}) {
        if (!command.starts_with(counted)) continue;
        const std::string_view tuples = PQcmdTuples(result);
        std::int64_t count = 0;
        if (std::from_chars(tuples.data(), tuples.data() + tuples.size(), count).ec == std::errc())
            changes_ = count;
        return;
    }
}

base::Error PgConnection::unavailable(std::string_view why) const {
    return make_error(ErrorType::kStoreUnavailable, options_.label + ": PostgreSQL at " + server_ +
                                                        " unavailable: " + std::string(why));
}

base::Error PgConnection::failed(const pg_result* result, std::string_view sql) const {
    const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = options_.label + ": PostgreSQL error";
    if (state != nullptr) message.append(" ").append(state);
    if (primary != nullptr) {
        message.append(": ").append(pg_one_line(primary));
    } else if (const std::string said = libpq_message(); !said.empty()) {
        message.append(": ").append(said);
    } else {
        message.append(": unexpected result ").append(PQresStatus(PQresultStatus(result)));
    }
    // 42P18 indeterminate_datatype: a parameter no context gives a type (`?1 IS NULL`).
    if (state != nullptr && std::string_view(state) == "42P18")
        message.append(" (give the parameter a type: CAST(?N AS BIGINT), CAST(?N AS TEXT), ...)");
    message.append(" in: ").append(pg_quoted_sql(sql));
    return make_error(ErrorType::kInternal, std::move(message));
}

std::string PgConnection::libpq_message() const {
    std::string message = pg_one_line(PQerrorMessage(connection_.get()));
    // libpq is not known to quote the password; should it ever, it is masked here.
    if (const char* password = PQpass(connection_.get()); password != nullptr)
        pg_replace_all(message, password, "***");
    return message;
}

Result<void> PgConnection::exec(std::string_view sql) {
    if (auto ready = usable(); !ready) return ready;
    // A deferred BEGIN goes first in the same simple query.
    const std::string text =
        begin_deferred_ ? std::string(kReadBegin) + "; " + std::string(sql) : std::string(sql);
    begin_deferred_ = false;
    auto result = checked(PQexec(connection_.get(), text.c_str()), sql);
    if (!result) return result.error();
    note_changes(result->get());
    return {};
}

PgConnection* PgConnection::of(sql::Connection& connection) noexcept {
    if (connection.dialect() != sql::Dialect::kPostgres) return nullptr;
    return static_cast<PgConnection*>(&connection);
}

Result<std::int64_t> PgConnection::copy_in(std::string_view target, PgCopyRows& rows) {
    if (auto ready = usable(); !ready) return ready.error();
    const std::string sql = "COPY " + std::string(target) + " FROM STDIN (FORMAT binary)";
    const std::string_view data = rows.finish();
    PGconn* connection = connection_.get();
    if (begin_deferred_) {
        begin_deferred_ = false;
        if (auto begun = checked(PQexec(connection, kReadBegin), kReadBegin); !begun)
            return begun.error();
    }
    PGresult* started = PQexec(connection, sql.c_str());
    if (PQresultStatus(started) != PGRES_COPY_IN) {
        auto result = checked(started, sql);  // the error it holds (COMMAND_OK cannot come here)
        if (!result) return result.error();
        return make_error(ErrorType::kInternal, options_.label + ": COPY did not start");
    }
    PQclear(started);
    // In pieces of 1 MiB: libpq sends as its buffer fills, so the server works meanwhile.
    constexpr std::size_t kPiece = std::size_t{1} << 20;
    bool sent = true;
    for (std::size_t at = 0; sent && at < data.size(); at += kPiece) {
        const std::size_t n = std::min(kPiece, data.size() - at);
        sent = PQputCopyData(connection, data.data() + at, static_cast<int>(n)) == 1;
    }
    sent = PQputCopyEnd(connection, sent ? nullptr : "glassbox: COPY cut short") == 1 && sent;
    // The COPY's own result, then none. A result still in COPY_IN means the data could not be
    // sent (the connection is gone): reported below rather than waited on.
    PgResult last;
    while (PGresult* next = PQgetResult(connection)) {
        last.reset(next);
        if (PQresultStatus(next) == PGRES_COPY_IN) break;
    }
    if (!sent || !last || PQresultStatus(last.get()) == PGRES_COPY_IN)
        return unavailable("COPY cut short: " + libpq_message());
    auto result = checked(last.release(), sql);
    if (!result) return result.error();
    const std::string_view tuples = PQcmdTuples(result->get());
    std::int64_t copied = 0;
    (void)std::from_chars(tuples.data(), tuples.data() + tuples.size(), copied);
    changes_ = copied;
    return copied;
}

Result<sql::Statement> PgConnection::prepare(const std::string& sql) {
    if (auto ready = usable(); !ready) return ready.error();
    if (auto it = cached_.find(sql); it != cached_.end()) return sql::Statement(*it->second);
    auto impl = std::make_unique<Impl>(*this, sql, "gb" + std::to_string(statements_named_ + 1));
    // Prepared now, so that a statement the server refuses fails here (as on SQLite).
    if (auto prepared = impl->prepare_on_server(); !prepared) return prepared.error();
    ++statements_named_;
    auto& cached = cached_[sql] = std::move(impl);
    return sql::Statement(*cached);
}

Result<sql::Statement> PgConnection::prepare_once(const std::string& sql) {
    if (auto ready = usable(); !ready) return ready.error();
    return sql::Statement(std::make_unique<Impl>(*this, sql, std::string()));
}

Result<void> PgConnection::begin(sql::TransactionKind kind) {
    if (auto ready = usable(); !ready) return ready;
    if (in_transaction()) {
        return make_error(ErrorType::kInternal,
                          options_.label + ": a transaction is already open on this connection");
    }
    if (kind == sql::TransactionKind::kRead) {
        transaction_open_ = true;
        read_only_ = true;
        begin_deferred_ = true;
        return {};
    }
    const std::string sql = "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(" +
                            std::to_string(options_.writer_lock_key) + ")";
    auto result = checked(PQexec(connection_.get(), sql.c_str()), sql);
    if (!result) {
        rollback();
        return result.error();
    }
    transaction_open_ = true;
    read_only_ = false;
    return {};
}

Result<void> PgConnection::commit() {
    settle();
    if (begin_deferred_) {  // a read transaction that read nothing: nothing to end
        begin_deferred_ = false;
        transaction_open_ = false;
        return {};
    }
    PGconn* connection = connection_.get();
    if (PQstatus(connection) == CONNECTION_BAD) {
        return unavailable("connection lost; the transaction was not committed");
    }
    if (PQtransactionStatus(connection) == PQTRANS_IDLE) {
        transaction_open_ = false;
        return make_error(ErrorType::kInternal, options_.label + ": no transaction to commit");
    }
    auto result = checked(PQexec(connection, "COMMIT"), "COMMIT");
    if (PQstatus(connection) != CONNECTION_BAD)
        transaction_open_ = PQtransactionStatus(connection) != PQTRANS_IDLE;
    if (!result) return result.error();
    // The server answers COMMIT of a failed transaction with ROLLBACK, and no error.
    if (std::string_view(PQcmdStatus(result->get())) == "ROLLBACK") {
        return make_error(ErrorType::kInternal,
                          options_.label +
                              ": the transaction was rolled back, not committed: one of its "
                              "statements had failed");
    }
    return {};
}

void PgConnection::rollback() noexcept {
    const bool read_only = read_only_;
    transaction_open_ = false;
    read_only_ = false;
    if (begin_deferred_) {  // nothing was sent
        begin_deferred_ = false;
        return;
    }
    settle();
    PGconn* connection = connection_.get();
    const auto status = PQtransactionStatus(connection);
    if (status != PQTRANS_INTRANS && status != PQTRANS_INERROR) return;
    // Ending a read has nothing to report: its answer is read before the next command
    // (settle), not waited for here.
    if (read_only && PQsendQuery(connection, "ROLLBACK") == 1) {
        rollback_in_flight_ = true;
        return;
    }
    PQclear(PQexec(connection, "ROLLBACK"));
}

bool PgConnection::in_transaction() const noexcept {
    if (transaction_open_) return true;
    if (rollback_in_flight_) return false;  // the transaction ends with the ROLLBACK sent
    const auto status = PQtransactionStatus(connection_.get());
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

}  // namespace glassbox::storage
