// What `glassbox up` runs on this host: its role (broker, workers or all) and the worker
// processes of each service (`--services graph-rag=3,store`), in start order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::cli {

// broker: the broker (and by default the trace collector and the gateway); workers: worker
// processes only, connected to a broker elsewhere (--broker); all: everything on one host.
enum class UpRole { kAll, kBroker, kWorkers };

std::optional<UpRole> up_role_from_string(std::string_view text) noexcept;
std::string_view to_string(UpRole role) noexcept;

// Every service `up` can run (the `glassbox worker` subcommand names), in start order: the
// services others call come before their callers, so a caller's first requests do not wait.
const std::vector<std::string>& up_services();

// One worker process: `glassbox worker <service>`, supervised as `name` (logs/<name>.log).
struct UpWorkerProcess {
    std::string name;     // "graph-rag", then "graph-rag-2", "graph-rag-3"
    std::string service;  // the worker subcommand
};

struct UpPlan {
    UpRole role = UpRole::kAll;
    bool broker = true;                    // start a broker on this host
    bool gateway = true;                   // start the HTTP gateway on this host
    std::vector<UpWorkerProcess> workers;  // in start order
};

// The largest instance count one service may ask for (`graph-rag=64`).
inline constexpr int kMaxUpInstances = 64;

// Parses `--services`: a comma list of service names, each optionally `=N` processes
// (1..kMaxUpInstances, default 1); "none" alone runs no workers. Spaces around items are
// allowed. An unknown or repeated service, an empty item or a bad count: InvalidRequest that
// names it. The result is in up_services() order, whatever order the list gave.
base::Result<std::vector<std::pair<std::string, int>>> parse_up_services(std::string_view list);

// The services a role runs when --services is not given:
//   all      every service of up_services();
//   broker   trace-collector (the collector stays beside the broker's spool);
//   workers  every service except trace-collector and store, which keep data in their home
//            (traces.db, knowledge/): a deployment runs one of each, on the host named for it.
std::vector<std::pair<std::string, int>> default_up_services(UpRole role);

// The plan for `role` with `services` (nullopt: the role's default) and `no_gateway`. The
// gateway runs with the broker (roles all and broker) unless `no_gateway`.
base::Result<UpPlan> plan_up(UpRole role, const std::optional<std::string>& services,
                             bool no_gateway);

// "graph-rag x2, document-rag" (or "no workers"): the plan's workers in one line.
std::string describe_workers(const UpPlan& plan);

}  // namespace glassbox::cli
