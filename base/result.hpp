// Typed errors and Result<T>: how expected failures travel as values (GCC 12 has no std::expected).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace glassbox::base {

// The closed set of error types that cross a process boundary. Their names are the wire
// spelling (`error.type` in JSON, the type frame of an ERROR command); docs/protocol.md lists them.
enum class ErrorType {
    kInvalidRequest,      // a body that is not what the service accepts (wrong type, bad value)
    kInvalidJson,         // not parseable as JSON, or not valid UTF-8
    kProtocolError,       // frames that break the protocol (header, command, frame count)
    kUnknownService,      // no worker has ever registered the service
    kServiceUnavailable,  // the service has no live worker and the request cannot wait
    kQueueFull,           // the service queue is at its bound (overflow policy `reject`)
    kEvicted,             // dropped from a full queue by a newer request (policy `drop-oldest`)
    kDeadlineExceeded,    // the request's deadline passed before its terminal reply
    kWorkerLost,          // the worker died; retries exhausted or the stream had begun
    kCancelled,           // the client cancelled the request
    kMessageTooLarge,     // a message above the configured maximum size
    kSpoolFull,           // the explain spool is at its bound (policy `fail-request`)
    kBrokerRestarted,     // the broker restarted while the request was in flight
    kDecodeError,         // a JSON value of the wrong shape for a message type
    kNotFound,            // a named thing (trace, session, document) does not exist
    kUpstreamError,       // a service this one called answered with an error
    kTimeout,             // a local wait (connect, receive) ran out
    kBrokerUnavailable,   // no broker completed a connection within the client's connect timeout
    kForbidden,           // the sender's key does not allow this (its roles, docs/security.md)
    kStoreUnavailable,    // the database a store keeps its state in cannot be reached now
    kInternal,            // a bug or an unexpected failure inside the service
};

std::string_view to_string(ErrorType type) noexcept;
std::optional<ErrorType> error_type_from_string(std::string_view name) noexcept;

// Where in an input an error was found: the file (as the reader was given it), the line and
// the column, 1-based (0: not known). Readers of files set it so a caller can show the place
// as data (the gateway's problem members) and not only inside the message. Local to a process:
// the bus carries the message alone.
struct ErrorPlace {
    std::string file;
    std::uint64_t line = 0;
    std::uint64_t column = 0;
    bool operator==(const ErrorPlace&) const = default;
};

struct Error {
    ErrorType type = ErrorType::kInternal;
    std::string message;
    std::optional<ErrorPlace> place{};

    // One line, as the CLI prints it: "DeadlineExceeded: no reply within 30s".
    std::string describe() const;
    bool operator==(const Error&) const = default;
};

inline Error make_error(ErrorType type, std::string message) {
    return Error{type, std::move(message)};
}

inline Error make_error(ErrorType type, std::string message, ErrorPlace place) {
    return Error{type, std::move(message), std::move(place)};
}

// A value or an Error. Accessors check: value() on an error is a programmer error.
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const& { return std::get<1>(state_); }
    Error&& error() && { return std::get<1>(std::move(state_)); }

private:
    std::variant<T, Error> state_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    const Error& error() const& { return *error_; }

private:
    std::optional<Error> error_;
};

}  // namespace glassbox::base
