// `glassbox status`: asks the broker's mmi.status and prints it as a table, or as JSON, with the
// storage backend the configuration chooses.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <fstream>

#include "base/time_format.hpp"
#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/settings.hpp"
#include "cli/storage_choice.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"
#include "storage/pg_dsn.hpp"

namespace glassbox::cli {
namespace {

using nlohmann::json;

// A field shown as text whatever its JSON type ("-" when absent): the reply is untrusted.
std::string field(const json& object, const char* key) {
    if (!object.is_object()) return "-";
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "-";
    if (it->is_string()) return it->get<std::string>();
    return it->dump();
}

std::string duration_text(const json& object, const char* key) {
    if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return "-";
    const auto total = static_cast<long long>(object[key].get<double>());
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%lldd %02lldh %02lldm %02llds", total / 86400,
                  total / 3600 % 24, total / 60 % 60, total % 60);
    return buffer;
}

// The clients with the most queued requests of a service, under its row (nothing if none).
void print_queued_by(const json& service) {
    const auto clients = service.is_object() ? service.value("queued_by", json::array()) : json{};
    if (!clients.is_array() || clients.empty()) return;
    std::cout << "    queued by " << field(service, "queued_clients") << " clients, most:";
    for (const auto& client : clients) {
        std::cout << ' ' << field(client, "client") << " (" << field(client, "queued") << ')';
    }
    std::cout << "\n";
}

// A service's workers by host: "10.0.0.2 x2, 10.0.0.3 x1" (docs/deployment.md).
std::string hosts_text(const json& service) {
    const auto hosts = service.find("hosts");
    if (hosts == service.end() || !hosts->is_object()) return {};
    std::string text;
    for (const auto& [host, count] : hosts->items()) {
        if (!text.empty()) text += ", ";
        text += host + " x" +
                (count.is_number_unsigned() ? std::to_string(count.get<std::uint64_t>()) : "?");
    }
    return text;
}

// "storage  sqlite, files in /h", "storage  postgres at db1:5432, dsn \"host=db1 password=***\"",
// and the read replica's line under it when there is one.
void print_storage(const json& status) {
    const auto storage = status.find("storage");
    if (storage == status.end() || !storage->is_object()) return;
    std::cout << "storage  " << field(*storage, "backend");
    if (storage->contains("error")) {
        std::cout << ": CONFIG ERROR: " << field(*storage, "error") << "\n";
    } else if (storage->contains("server")) {
        std::cout << " at " << field(*storage, "server") << ", dsn \"" << field(*storage, "dsn")
                  << "\"\n";
        if (storage->contains("read_server")) {
            std::cout << "         reads at " << field(*storage, "read_server") << ", dsn \""
                      << field(*storage, "read_dsn") << "\"\n";
        }
    } else {
        std::cout << ", files in " << field(*storage, "home") << "\n";
    }
}

// The trace store's lines: its counts, the collector's writes, retention.
void print_traces(const json& traces) {
    std::cout << "\ntraces   " << field(traces, "sessions") << " sessions, "
              << field(traces, "events") << " events, " << field(traces, "triples") << " triples, "
              << field(traces, "quarantined") << " quarantined explain messages" << std::endl;
    // The collector's writes: a store that cannot write shows here (issue 16 point 1).
    if (const auto c = traces.find("collector"); c != traces.end() && c->is_object()) {
        std::cout << "         store failures " << field(*c, "store_failures")
                  << ", not yet stored " << field(*c, "pending") << " deliveries";
        if (const auto failing = c->find("store_failing");
            failing != c->end() && failing->is_boolean() && failing->get<bool>()) {
            std::cout << ", FAILING: " << field(*c, "last_store_error");
        }
        std::cout << std::endl;
    }
    // Retention (docs/traces.md, "Retention"): what it keeps and what it pruned.
    if (const auto r = traces.find("retention"); r != traces.end() && r->is_object()) {
        std::cout << "         pruned " << field(*r, "traces") << " traces, " << field(*r, "events")
                  << " events, " << field(*r, "bytes") << " bytes since start";
        const auto failures = r->find("failures");
        if (failures != r->end() && failures->is_number_integer() &&
            failures->get<std::int64_t>() > 0) {
            std::cout << ", " << field(*r, "failures")
                      << " prune failures, last: " << field(*r, "last_error");
        }
        std::cout << std::endl;
    }
}

// An integer member of a mirror's stats, or nullopt (absent or not a number).
std::optional<std::int64_t> count_of(const json& object, const char* key) {
    if (!object.is_object()) return std::nullopt;
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
}

// The trace mirror's part of the sparql line: "traces mirrored up to T (N pending)".
std::string trace_mirror_text(const json& mirror) {
    if (!mirror.is_object() || !mirror.value("configured", false)) return {};
    std::string text = "traces mirrored";
    if (const auto watermark = count_of(mirror, "watermark"); watermark && *watermark > 0)
        text.append(" up to ").append(
            base::format_xsd_datetime_ms(*watermark, base::TimePrecision::kSeconds));
    const auto pending = count_of(mirror, "pending").value_or(0);
    text.append(" (").append(std::to_string(pending)).append(" pending)");
    if (const auto error = mirror.find("last_error");
        pending > 0 && error != mirror.end() && error->is_string() && !error->empty())
        text.append(", engine failing: ").append(error->get<std::string>());
    return text;
}

// The store mirror's part: "collections 2/2 current".
std::string store_mirror_text(const json& mirror) {
    if (!mirror.is_object() || !mirror.value("configured", false)) return {};
    const json collections = mirror.value("collections", json::array());
    if (!collections.is_array()) return {};
    std::size_t current = 0;
    for (const auto& c : collections) {
        const auto version = count_of(c, "version");
        const auto mirrored = count_of(c, "mirrored");
        if (version && mirrored && *mirrored >= *version) ++current;
    }
    std::string text = "collections ";
    text.append(std::to_string(current))
        .append("/")
        .append(std::to_string(collections.size()))
        .append(" current");
    if (const auto error = mirror.find("last_error"); current < collections.size() &&
                                                      error != mirror.end() && error->is_string() &&
                                                      !error->empty())
        text.append(", engine failing: ").append(error->get<std::string>());
    return text;
}

// One line for the OpenTelemetry exporter (docs/operations.md, "OpenTelemetry"), when the
// collector has an endpoint: where to, what went, what waits and what was dropped.
void print_otel(const json& traces) {
    const auto otel = traces.find("otel");
    if (otel == traces.end() || !otel->is_object() || !otel->value("configured", false)) return;
    const json dropped = otel->value("dropped", json::object());
    std::cout << "otel     " << field(*otel, "endpoint") << " (" << field(*otel, "protocol")
              << ") · exported " << field(*otel, "exported_runs") << " runs, "
              << field(*otel, "exported_spans") << " spans · " << field(*otel, "pending")
              << " pending · dropped " << field(dropped, "queue_full") << " queue full, "
              << field(dropped, "rejected") << " rejected";
    const auto pending = count_of(*otel, "pending").value_or(0);
    if (const auto error = otel->find("last_error");
        pending > 0 && error != otel->end() && error->is_string() && !error->empty())
        std::cout << " · receiver failing: " << error->get<std::string>();
    std::cout << std::endl;
}

// One line for sampling (docs/traces.md, "Sampling") when it is on or decided something: the
// fraction kept whole, the top-level runs kept whole by why, summarised, and waiting.
void print_sampling(const json& traces) {
    const auto sampling = traces.find("sampling");
    if (sampling == traces.end() || !sampling->is_object()) return;
    const json whole = sampling->value("whole", json::object());
    std::int64_t decided = count_of(*sampling, "summarised").value_or(0);
    for (const char* key : {"error", "escalation", "evaluated", "pinned", "sampled"})
        decided += count_of(whole, key).value_or(0);
    const json fraction = sampling->value("fraction", json(1.0));
    const bool on = fraction.is_number() && fraction.get<double>() < 1.0;
    if (!on && decided == 0) return;
    std::cout << "sampling " << (on ? "traces.sample " + fraction.dump() : std::string("off"))
              << " · whole " << field(whole, "error") << " error, " << field(whole, "escalation")
              << " escalation, " << field(whole, "evaluated") << " evaluated, "
              << field(whole, "pinned") << " pinned, " << field(whole, "sampled")
              << " sampled · summarised " << field(*sampling, "summarised") << " · waiting "
              << field(*sampling, "waiting") << std::endl;
}

// One line for cost (docs/traces.md, "Cost") when a stored run called a model: the total in the
// collector's currency, the models, and those without a price.
void print_costs(const json& traces) {
    const auto costs = traces.find("costs");
    if (costs == traces.end() || !costs->is_object()) return;
    const json models = costs->value("by_model", json::array());
    if (!models.is_array() || models.empty()) return;
    const json total = costs->value("total", json(0.0));
    std::cout << "cost     " << render::format_cost(total.is_number() ? total.get<double>() : 0.0)
              << " " << render::safe_text(costs->value("currency", std::string()), false) << " · "
              << models.size() << (models.size() == 1 ? " model" : " models");
    std::string unpriced;
    for (const auto& m : costs->value("unpriced", json::array()))
        if (m.is_string()) unpriced += (unpriced.empty() ? "" : ", ") + m.get<std::string>();
    if (!unpriced.empty()) std::cout << " · no price for " << render::safe_text(unpriced, false);
    std::cout << std::endl;
}

// One line for the SPARQL engine and its mirrors (docs/sparql.md), when the collector or the store
// says it mirrors; nothing otherwise.
void print_sparql(const json& status) {
    const auto sparql = status.find("sparql");
    if (sparql == status.end() || !sparql->is_object()) return;
    std::string line = "sparql   ";
    line.append(field(*sparql, "endpoint"));
    for (const auto& part : {trace_mirror_text(sparql->value("traces", json())),
                             store_mirror_text(sparql->value("collections", json()))}) {
        if (!part.empty()) line.append(" · ").append(part);
    }
    std::cout << line << std::endl;
}

void print_table(const json& status) {
    const json broker = status.value("broker", json::object());
    std::cout << "broker   " << field(broker, "endpoint") << "  (explain topic "
              << field(broker, "pub_endpoint") << ")\n";
    std::cout << "version  " << field(broker, "version") << "  instance "
              << field(broker, "instance") << "\n";
    std::cout << "uptime   " << duration_text(broker, "uptime_s") << "\n";
    if (const auto sec = status.find("security"); sec != status.end() && sec->is_object()) {
        if (sec->value("mode", "") == "curve") {
            std::cout << "security CURVE, " << sec->value("allowed_keys", 0)
                      << " allowed keys; refused " << sec->value("peers_refused", 0)
                      << " connections, " << sec->value("messages_refused", 0) << " messages\n";
        } else {
            std::cout << "security INSECURE: plain TCP, no keys (any process that reaches the port "
                         "is trusted)\n";
        }
    }
    if (const auto g = status.find("gateway"); g != status.end() && g->is_object()) {
        std::cout << "gateway  " << field(*g, "url") << "  (pid " << field(*g, "pid") << ", "
                  << (g->value("running", false) ? "running" : "not running") << ")\n";
    }
    print_storage(status);
    std::cout << "\n";

    std::cout << std::left << std::setw(24) << "SERVICE" << std::right << std::setw(8) << "WORKERS"
              << std::setw(6) << "IDLE" << std::setw(8) << "QUEUED" << std::setw(11) << "MAX_QUEUE"
              << "  " << std::left << std::setw(12) << "OVERFLOW"
              << "HOSTS\n";
    const json services = status.value("services", json::array());
    if (!services.is_array() || services.empty()) std::cout << "(no services registered)\n";
    if (services.is_array()) {
        for (const auto& service : services) {
            std::cout << std::left << std::setw(24) << field(service, "name") << std::right
                      << std::setw(8) << field(service, "workers") << std::setw(6)
                      << field(service, "idle") << std::setw(8) << field(service, "queued")
                      << std::setw(11) << field(service, "max_queue") << "  " << std::left
                      << std::setw(12) << field(service, "overflow") << hosts_text(service) << "\n";
            print_queued_by(service);
        }
    }
    const json spool = status.value("spool", json::object());
    std::cout << "\nspool    " << field(spool, "messages") << " messages, " << field(spool, "bytes")
              << " bytes (max " << field(spool, "max_messages") << " messages, "
              << field(spool, "max_bytes") << " bytes, policy " << field(spool, "policy") << ")\n";
    std::cout << "         dropped " << field(spool, "dropped") << ", collectors "
              << field(spool, "collectors") << ", in flight " << field(spool, "in_flight")
              << std::endl;
    // What the broker refused from its peers (docs/protocol.md §5.1, §5.3, §6.1).
    const json counters = status.value("counters", json::object());
    std::cout << "refused  " << field(counters, "foreign_tokens")
              << " answers for requests not given, " << field(counters, "foreign_sessions")
              << " explains into others' sessions, " << field(counters, "explains_out_of_order")
              << " out of order, " << field(counters, "acks_refused") << " ACKs" << std::endl;
    if (status.contains("traces")) print_traces(status["traces"]);
    if (status.contains("traces")) print_otel(status["traces"]);
    if (status.contains("traces")) print_sampling(status["traces"]);
    if (status.contains("traces")) print_costs(status["traces"]);
    print_sparql(status);
}

// The trace store's counters (sessions, quarantined explain messages, ...) when a collector
// serves the `trace` service; nothing when none does, so status works without one.
std::optional<json> trace_stats(bus::BusClient& bus, const json& status,
                                std::chrono::milliseconds timeout) {
    const json services = status.value("services", json::array());
    if (!services.is_array()) return std::nullopt;
    bool served = false;
    for (const auto& service : services)
        served = served || field(service, "name") == schema::services::kTrace;
    if (!served) return std::nullopt;
    auto replies = bus.call(schema::services::kTrace, json{{"op", "stats"}}, timeout);
    if (!replies || replies->empty() || !replies->back().body.is_object()) return std::nullopt;
    return replies->back().body;
}

// The store's mirror of the collections into the SPARQL engine ("sparql_mirror" of its stats,
// docs/sparql.md) when a store serves; nothing otherwise.
std::optional<json> store_mirror(bus::BusClient& bus, const json& status,
                                 std::chrono::milliseconds timeout) {
    const json services = status.value("services", json::array());
    if (!services.is_array()) return std::nullopt;
    bool served = false;
    for (const auto& service : services)
        served = served || field(service, "name") == schema::services::kStore;
    if (!served) return std::nullopt;
    auto replies = bus.call(schema::services::kStore,
                            json{{"op", "stats"}, {"sparql_mirror_only", true}}, timeout);
    if (!replies || replies->empty() || !replies->back().body.is_object()) return std::nullopt;
    const auto mirror = replies->back().body.find("sparql_mirror");
    if (mirror == replies->back().body.end() || !mirror->is_object()) return std::nullopt;
    return *mirror;
}

// {endpoint, traces, collections}: the engine this home's configuration names and what each
// mirror reports of it; nullopt when neither mirror reports.
std::optional<json> sparql_status(const json& traces, const std::optional<json>& store) {
    json out{{"endpoint", settings().text("sparql.endpoint")}};
    if (traces.is_object() && traces.contains("sparql_mirror"))
        out["traces"] = traces["sparql_mirror"];
    if (store) out["collections"] = *store;
    if (!out.contains("traces") && !out.contains("collections")) return std::nullopt;
    return out;
}

// The gateway `glassbox up` started, from its ready file in the home: {url, pid, running}.
std::optional<json> gateway_status(const ClientOptions& options) {
    std::ifstream in(options.home_path() / "run" / "gateway.ready");
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    json ready = json::parse(text.str(), nullptr, false);
    if (!ready.is_object() || !ready.contains("url") || !ready["url"].is_string())
        return std::nullopt;
    const long pid =
        ready.contains("pid") && ready["pid"].is_number_integer() ? ready["pid"].get<long>() : 0;
    return json{{"url", ready["url"]},
                {"pid", pid},
                {"running", pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0}};
}

// The storage backend this configuration chooses (issue 34), its connection strings masked: what
// the collector and the store use when they run with the same file and environment (as under
// `glassbox up`). A postgres backend without a DSN shows as an error, not a failure of status.
json storage_status(const ClientOptions& options) {
    const auto& s = settings();
    json out{{"backend", s.text("storage.backend")}};
    const auto choice = storage_choice(s);
    if (!choice) {
        out["error"] = choice.error().message;
    } else if (choice->backend == StorageBackend::kSqlite) {
        out["home"] = options.home_path().string();
    } else {
        out["server"] = storage::dsn_server(choice->dsn);
        out["dsn"] = storage::masked_dsn(choice->dsn);
        if (!choice->read_dsn.empty()) {
            out["read_server"] = storage::dsn_server(choice->read_dsn);
            out["read_dsn"] = storage::masked_dsn(choice->read_dsn);
        }
    }
    return out;
}

void run_status(const ClientOptions& options) {
    bus::BusClientConfig config = options.bus_config();
    bus::BusClient bus(config);
    auto replies = bus.call(schema::protocol::kMmiStatus, json::object(), options.timeout());
    if (!replies) exit_with_error(replies.error());
    json status = replies->back().body;
    if (!status.is_object()) {
        exit_with_error(base::make_error(base::ErrorType::kDecodeError,
                                         "mmi.status reply is not a JSON object"));
    }
    if (auto traces = trace_stats(bus, status, options.timeout()))
        status["traces"] = std::move(*traces);
    if (auto sparql = sparql_status(status.value("traces", json()),
                                    store_mirror(bus, status, options.timeout())))
        status["sparql"] = std::move(*sparql);
    if (auto gateway = gateway_status(options)) status["gateway"] = std::move(*gateway);
    status["storage"] = storage_status(options);
    if (options.json) {
        std::cout << status.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
    } else {
        print_table(status);
    }
}

}  // namespace

void add_status_command(CLI::App& app) {
    auto [command, options] = add_command<ClientOptions>(
        app, "status", "Show the broker: services, workers, queue depths, spool, uptime",
        run_status);
    add_client_options(*command, *options, 5'000);
}

}  // namespace glassbox::cli
