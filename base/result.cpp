// Wire names of the typed errors.
#include "base/result.hpp"

#include <array>

namespace glassbox::base {
namespace {

struct ErrorName {
    ErrorType type;
    std::string_view name;
};

constexpr std::array kErrorNames{
    ErrorName{ErrorType::kInvalidRequest, "InvalidRequest"},
    ErrorName{ErrorType::kInvalidJson, "InvalidJson"},
    ErrorName{ErrorType::kProtocolError, "ProtocolError"},
    ErrorName{ErrorType::kUnknownService, "UnknownService"},
    ErrorName{ErrorType::kServiceUnavailable, "ServiceUnavailable"},
    ErrorName{ErrorType::kQueueFull, "QueueFull"},
    ErrorName{ErrorType::kEvicted, "Evicted"},
    ErrorName{ErrorType::kDeadlineExceeded, "DeadlineExceeded"},
    ErrorName{ErrorType::kWorkerLost, "WorkerLost"},
    ErrorName{ErrorType::kCancelled, "Cancelled"},
    ErrorName{ErrorType::kMessageTooLarge, "MessageTooLarge"},
    ErrorName{ErrorType::kSpoolFull, "SpoolFull"},
    ErrorName{ErrorType::kBrokerRestarted, "BrokerRestarted"},
    ErrorName{ErrorType::kDecodeError, "DecodeError"},
    ErrorName{ErrorType::kNotFound, "NotFound"},
    ErrorName{ErrorType::kUpstreamError, "UpstreamError"},
    ErrorName{ErrorType::kTimeout, "Timeout"},
    ErrorName{ErrorType::kBrokerUnavailable, "BrokerUnavailable"},
    ErrorName{ErrorType::kForbidden, "Forbidden"},
    ErrorName{ErrorType::kStoreUnavailable, "StoreUnavailable"},
    ErrorName{ErrorType::kInternal, "Internal"},
};

}  // namespace

std::string_view to_string(ErrorType type) noexcept {
    for (const auto& entry : kErrorNames) {
        if (entry.type == type) return entry.name;
    }
    return "Internal";
}

std::optional<ErrorType> error_type_from_string(std::string_view name) noexcept {
    for (const auto& entry : kErrorNames) {
        if (entry.name == name) return entry.type;
    }
    return std::nullopt;
}

std::string Error::describe() const {
    std::string line{to_string(type)};
    if (!message.empty()) {
        line += ": ";
        line += message;
    }
    return line;
}

}  // namespace glassbox::base
