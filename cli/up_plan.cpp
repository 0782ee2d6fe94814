// The roles of `glassbox up` and the worker processes each runs: parsing --services, defaults.
#include "cli/up_plan.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include "base/enum_names.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

// The first is the default.
constexpr base::EnumName<UpRole> kUpRoleNames[] = {
    {UpRole::kAll, "all"}, {UpRole::kBroker, "broker"}, {UpRole::kWorkers, "workers"}};

std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t");
    return text.substr(first, last - first + 1);
}

bool is_up_service(std::string_view name) {
    const auto& all = up_services();
    return std::find(all.begin(), all.end(), name) != all.end();
}

std::string service_names() {
    std::string names;
    for (const auto& service : up_services()) names += (names.empty() ? "" : ", ") + service;
    return names;
}

}  // namespace

std::optional<UpRole> up_role_from_string(std::string_view text) noexcept {
    return base::enum_from_name(kUpRoleNames, text);
}

std::string_view to_string(UpRole role) noexcept { return base::enum_name(kUpRoleNames, role); }

const std::vector<std::string>& up_services() {
    static const std::vector<std::string> services = {
        "echo",      "trace-collector", "embeddings", "store", "llm",
        "graph-rag", "document-rag",    "agent",      "query"};
    return services;
}

base::Result<std::vector<std::pair<std::string, int>>> parse_up_services(std::string_view list) {
    std::map<std::string, int, std::less<>> counts;
    if (trim(list) == "none") return std::vector<std::pair<std::string, int>>{};
    std::size_t start = 0;
    for (;;) {
        const auto comma = list.find(',', start);
        const auto item = trim(list.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (item.empty()) {
            return make_error(ErrorType::kInvalidRequest,
                              "--services \"" + std::string(list) +
                                  "\": an empty item (write NAME or NAME=N, comma-separated)");
        }
        const auto equals = item.find('=');
        const auto name = trim(item.substr(0, equals));
        int instances = 1;
        if (equals != std::string_view::npos) {
            const auto count = trim(item.substr(equals + 1));
            const auto [end, ec] =
                std::from_chars(count.data(), count.data() + count.size(), instances);
            if (ec != std::errc{} || end != count.data() + count.size() || instances < 1 ||
                instances > kMaxUpInstances) {
                return make_error(ErrorType::kInvalidRequest,
                                  "--services: \"" + std::string(item) +
                                      "\": the count must be a whole number from 1 to " +
                                      std::to_string(kMaxUpInstances));
            }
        }
        if (name == "none") {
            return make_error(ErrorType::kInvalidRequest,
                              "--services: \"none\" stands alone (no workers on this host)");
        }
        if (!is_up_service(name)) {
            return make_error(ErrorType::kInvalidRequest,
                              "--services: unknown service \"" + std::string(name) +
                                  "\" (known: " + service_names() + ")");
        }
        if (!counts.emplace(std::string(name), instances).second) {
            return make_error(ErrorType::kInvalidRequest,
                              "--services: \"" + std::string(name) +
                                  "\" is named twice (give its count once: NAME=N)");
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    std::vector<std::pair<std::string, int>> ordered;
    for (const auto& service : up_services()) {
        if (const auto it = counts.find(service); it != counts.end())
            ordered.emplace_back(service, it->second);
    }
    return ordered;
}

std::vector<std::pair<std::string, int>> default_up_services(UpRole role) {
    std::vector<std::pair<std::string, int>> services;
    for (const auto& service : up_services()) {
        const bool stateful = service == "trace-collector" || service == "store";
        const bool runs = role == UpRole::kAll ||
                          (role == UpRole::kBroker && service == "trace-collector") ||
                          (role == UpRole::kWorkers && !stateful);
        if (runs) services.emplace_back(service, 1);
    }
    return services;
}

base::Result<UpPlan> plan_up(UpRole role, const std::optional<std::string>& services,
                             bool no_gateway) {
    UpPlan plan;
    plan.role = role;
    plan.broker = role != UpRole::kWorkers;
    plan.gateway = plan.broker && !no_gateway;
    std::vector<std::pair<std::string, int>> counts;
    if (services) {
        auto parsed = parse_up_services(*services);
        if (!parsed) return std::move(parsed).error();
        counts = std::move(parsed).value();
    } else {
        counts = default_up_services(role);
    }
    if (role == UpRole::kWorkers && counts.empty()) {
        return make_error(
            ErrorType::kInvalidRequest,
            "--role workers --services none: a workers host with no workers has nothing to run");
    }
    for (const auto& [service, instances] : counts) {
        for (int i = 1; i <= instances; ++i) {
            plan.workers.push_back({i == 1 ? service : service + "-" + std::to_string(i), service});
        }
    }
    return plan;
}

std::string describe_workers(const UpPlan& plan) {
    std::string text;
    for (std::size_t i = 0; i < plan.workers.size();) {
        std::size_t n = 1;
        while (i + n < plan.workers.size() &&
               plan.workers[i + n].service == plan.workers[i].service)
            ++n;
        text += (text.empty() ? "" : ", ") + plan.workers[i].service +
                (n > 1 ? " x" + std::to_string(n) : "");
        i += n;
    }
    return text.empty() ? "no workers" : text;
}

}  // namespace glassbox::cli
