// RFC 9457 problem details for the gateway's error answers.
#include "gateway/problem.hpp"

namespace glassbox::gateway {

using base::ErrorType;

int http_status_for(ErrorType type) noexcept {
    switch (type) {
        case ErrorType::kInvalidRequest:
        case ErrorType::kInvalidJson:
        case ErrorType::kDecodeError:
            return 400;
        case ErrorType::kNotFound:
            return 404;
        case ErrorType::kMessageTooLarge:
            return 413;
        case ErrorType::kForbidden:
            return 403;
        case ErrorType::kUnknownService:
        case ErrorType::kServiceUnavailable:
        case ErrorType::kQueueFull:
        case ErrorType::kEvicted:
        case ErrorType::kBrokerUnavailable:
        case ErrorType::kBrokerRestarted:
        case ErrorType::kSpoolFull:
        case ErrorType::kStoreUnavailable:
            return 503;
        case ErrorType::kDeadlineExceeded:
        case ErrorType::kTimeout:
            return 504;
        case ErrorType::kUpstreamError:
        case ErrorType::kWorkerLost:
        case ErrorType::kProtocolError:
            return 502;
        case ErrorType::kCancelled:
        case ErrorType::kInternal:
            return 500;
    }
    return 500;
}

Problem problem_from(const base::Error& error) {
    Problem problem{http_status_for(error.type), std::string(base::to_string(error.type)),
                    error.message};
    if (error.place) {
        problem.members["file"] = error.place->file;
        if (error.place->line > 0) problem.members["line"] = error.place->line;
        if (error.place->column > 0) problem.members["column"] = error.place->column;
    }
    return problem;
}

std::string_view reason_phrase(int status) noexcept {
    switch (status) {
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 406:
            return "Not Acceptable";
        case 408:
            return "Request Timeout";
        case 413:
            return "Content Too Large";
        case 415:
            return "Unsupported Media Type";
        case 429:
            return "Too Many Requests";
        case 500:
            return "Internal Server Error";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return "Error";
    }
}

nlohmann::json problem_json(const Problem& problem, std::string_view request_id) {
    nlohmann::json body{{"type", "https://glassbox.dev/problems#" + problem.error},
                        {"title", std::string(reason_phrase(problem.status))},
                        {"status", problem.status},
                        {"detail", problem.detail},
                        {"error", problem.error},
                        {"request_id", std::string(request_id)}};
    // Members never replace the standard ones.
    if (problem.members.is_object())
        for (const auto& [name, value] : problem.members.items()) body.emplace(name, value);
    return body;
}

}  // namespace glassbox::gateway
