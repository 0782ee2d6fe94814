// RFC 9457 problem details: every error the gateway answers, with its typed error name.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::gateway {

// An HTTP error answer: the status, the typed error name (a base::ErrorType name, or one of the
// gateway's own: PayloadTooLarge, RateLimited, TooManyStreams, Unauthorized, Forbidden,
// NotAcceptable, UnsupportedMediaType, MethodNotAllowed, NotFound, RequestTimeout) and a
// human-readable detail.
struct Problem {
    int status = 500;
    std::string error = "Internal";
    std::string detail;
    // Extension members (RFC 9457 §3.2) beside the standard ones: where an upload went wrong
    // (`file`, `line`, `column`), from the error's place.
    nlohmann::json members = nlohmann::json::object();
};

// The status a bus error is answered with: bad input 400, NotFound 404, MessageTooLarge 413,
// a missing or overloaded service 503, deadlines 504, a failing service 502, else 500.
int http_status_for(base::ErrorType type) noexcept;

// The error's status, name and message; its place (base::ErrorPlace), when it has one, as the
// members `file`, `line` and `column` (each only when known).
Problem problem_from(const base::Error& error);

// {type, title, status, detail, error, request_id} and the problem's members; `type` is
// "about:blank" refined by a fragment naming the error (https://glassbox.dev/problems#<error>),
// title the status's reason.
nlohmann::json problem_json(const Problem& problem, std::string_view request_id);

// The reason phrase of an HTTP status ("Not Found"); "Error" for one it does not know.
std::string_view reason_phrase(int status) noexcept;

inline constexpr std::string_view kProblemContentType = "application/problem+json";

}  // namespace glassbox::gateway
