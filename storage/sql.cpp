// The backend-neutral statement and transaction (storage/sql.hpp).
#include "storage/sql.hpp"

namespace glassbox::storage::sql {

using base::ErrorType;
using base::make_error;
using base::Result;

std::string_view dialect_name(Dialect dialect) noexcept {
    return dialect == Dialect::kPostgres ? "postgres" : "sqlite";
}

std::optional<std::string> Row::optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return std::string(text(column));
}

// ---- Statement ---------------------------------------------------------------------------------

Statement::~Statement() {
    if (impl_ != nullptr && !owned_) impl_->reset();
}

Statement& Statement::bind(int index, std::string_view text) {
    impl_->bind_text(index, text);
    return *this;
}

Statement& Statement::bind_static(int index, std::string_view text) {
    impl_->bind_text_static(index, text);
    return *this;
}

Statement& Statement::bind_blob(int index, std::span<const std::byte> bytes) {
    impl_->bind_blob(index, bytes);
    return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
    impl_->bind_blob(index, std::as_bytes(std::span(bytes.data(), bytes.size())));
    return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
    impl_->bind_int64(index, value);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    impl_->bind_real(index, value);
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::string>& text) {
    if (text) return bind(index, std::string_view(*text));
    return bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<std::int64_t>& value) {
    if (value) return bind(index, *value);
    return bind_null(index);
}

Statement& Statement::bind_null(int index) {
    impl_->bind_null(index);
    return *this;
}

Result<void> Statement::run() {
    for (;;) {
        auto row = step();
        if (!row) return row.error();
        if (!*row) return {};
    }
}

// ---- Transaction -------------------------------------------------------------------------------

Result<Transaction> Transaction::begin(Connection& connection, TransactionKind kind) {
    if (auto r = connection.begin(kind); !r) return r.error();
    return Transaction(connection);
}

Transaction::~Transaction() {
    if (connection_ != nullptr) connection_->rollback();
}

Result<void> Transaction::commit() {
    if (connection_ == nullptr)
        return make_error(ErrorType::kInternal, "transaction already ended");
    auto r = connection_->commit();
    if (r) connection_ = nullptr;
    return r;
}

}  // namespace glassbox::storage::sql
