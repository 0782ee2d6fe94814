// `glassbox worker <name>`: runs one worker process until SIGTERM/SIGINT, then stops gracefully.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "base/time_format.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"
#include "cli/sparql_settings.hpp"
#include "cli/storage_choice.hpp"
#include "cli/worker_support.hpp"
#include "http/sparql_client.hpp"
#include "schema/prices.hpp"
#include "schema/services.hpp"
#include "schema/untrusted_json.hpp"
#include "text/redactor.hpp"
#include "workers/echo/echo_service.hpp"
#include "workers/runtime/worker.hpp"
#include "workers/trace_collector/collector.hpp"
#include "workers/trace_collector/otel_exporter.hpp"
#include "workers/trace_collector/retention.hpp"
#include "workers/trace_collector/sampling.hpp"
#include "workers/trace_collector/sparql_mirror.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::cli {
namespace {

// One entry per worker the executable can run: a new worker adds one line to kBuiltinWorkers.
struct WorkerEntry {
    const char* name;  // the subcommand and the default service name
    const char* description;
    runtime::Handler (*make_handler)();
};

const std::vector<WorkerEntry> kBuiltinWorkers = {
    {"echo", "Diagnostic echo service: answers with its request and a Question → Synthesis trace",
     &echo::make_echo_handler},
};

}  // namespace

void add_bus_options(CLI::App& sub, BusOptions& options, const std::string& home_help) {
    add_setting_option(sub, "broker.endpoint", "--broker");
    sub.add_option("--home", options.home, home_help)->envname("GLASSBOX_HOME");
    add_setting_option(sub, "broker.heartbeat_ms", "--heartbeat-ms");
    add_setting_option(sub, "broker.liveness", "--liveness");
    add_client_security_options(sub);
}

std::optional<bus::CurveClientKeys> worker_curve_keys(const BusOptions& options,
                                                      std::string_view key_name,
                                                      std::string_view endpoint) {
    auto keys =
        resolve_client_keys(security_settings(), resolve_home(options.home), key_name, endpoint);
    if (!keys) exit_with_error(keys.error());
    return std::move(keys).value();
}

void add_worker_options(CLI::App& sub, WorkerOptions& options, const std::string& default_service) {
    add_bus_options(sub, options.bus, "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    sub.add_option("--service", options.service, "Register under this service name instead")
        ->default_str(default_service);
    sub.add_option("--name", options.name, "Worker name in logs and explain messages");
    sub.add_option("--threads", options.threads,
                   "Worker threads (independent workers) in this process")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    add_setting_option(sub, "worker.drain_timeout_ms", "--drain-timeout-ms");
}

nlohmann::json service_settings_json(std::string_view table) {
    const auto& s = settings();
    const std::string prefix = std::string(table) + ".";
    const std::string file_key = prefix + "config";
    nlohmann::json object = nlohmann::json::object();
    if (const auto& file = s.text(file_key); !file.empty()) {
        std::ifstream in(file);
        if (!in)
            exit_with_error(
                base::make_error(base::ErrorType::kNotFound, "cannot read config file " + file));
        const std::string text((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        auto parsed = schema::parse_untrusted_json(text);
        if (!parsed)
            exit_with_error(base::make_error(base::ErrorType::kInvalidJson,
                                             file + ": " + parsed.error().message));
        if (!parsed->is_object()) {
            exit_with_error(base::make_error(
                base::ErrorType::kInvalidJson,
                file + ": expected a JSON object of " + std::string(table) + " settings"));
        }
        object = std::move(parsed).value();
    }
    for (const auto& setting : s.registry().settings()) {
        if (setting.key.rfind(prefix, 0) != 0 || setting.key == file_key) continue;
        const std::string name = setting.key.substr(prefix.size());
        if (!s.is_set(setting.key)) continue;  // the service's own default, the same value
        const auto& value = s.value(setting.key);
        if (const auto* text = std::get_if<std::string>(&value)) {
            if (name == "provider" && *text == "auto") {
                object.erase(name);
            } else {
                object[name] = name == "api_key_env" && *text == "-" ? std::string() : *text;
            }
        } else if (const auto* whole = std::get_if<std::int64_t>(&value)) {
            object[name] = *whole;
        } else if (const auto* real = std::get_if<double>(&value)) {
            object[name] = *real;
        } else {
            object[name] = std::get<bool>(value);
        }
    }
    return object;
}

InlineHook inline_when_small() {
    return [](std::string_view /*meta*/, std::string_view body) {
        return body.size() <= kInlineBodyMax;
    };
}

void run_worker(const std::string& default_service, const WorkerOptions& options,
                runtime::Handler handler, const sigset_t& stop_signals,
                std::function<bool(std::string_view)> text_body, InlineHook run_inline) {
    const auto& s = settings();
    runtime::WorkerConfig config;
    config.endpoint = s.text("broker.endpoint");
    config.service = options.service.empty() ? default_service : options.service;
    config.curve = worker_curve_keys(options.bus, kWorkerKey, config.endpoint);
    config.threads = options.threads;
    config.heartbeat = std::chrono::milliseconds{s.integer("broker.heartbeat_ms")};
    config.liveness = static_cast<int>(s.integer("broker.liveness"));
    config.drain_timeout = std::chrono::milliseconds{s.integer("worker.drain_timeout_ms")};
    config.worker_name = options.name;
    config.text_body = std::move(text_body);
    config.run_inline = std::move(run_inline);
    // Redaction before anything leaves the worker (docs/security.md, "Redaction"); the settings
    // were checked when the configuration was resolved, by the same parser.
    auto redactor =
        text::Redactor::from_settings(s.text("redaction.rules"), s.text("redaction.patterns"));
    if (!redactor) exit_with_error(redactor.error());
    config.redactor = std::make_shared<const text::Redactor>(std::move(redactor).value());

    std::unique_ptr<runtime::Worker> worker;
    try {
        worker = std::make_unique<runtime::Worker>(config, std::move(handler));
    } catch (const std::invalid_argument& e) {
        exit_with_error(base::make_error(base::ErrorType::kInvalidRequest, e.what()));
    }
    worker->start();
    base::component_logger("worker")->info(
        "event=started service={} threads={} endpoint={} inline={}", config.service, config.threads,
        config.endpoint, config.run_inline ? "quick" : "none");
    const int signal = wait_for_stop_signal(stop_signals);
    base::component_logger("worker")->info("event=signal signal={} action=graceful_stop", signal);
    worker->stop();
    worker->wait();
    base::component_logger("worker")->info("event=stopped service={}", config.service);
}

namespace {

struct TraceCollectorOptions {
    BusOptions bus;
    std::size_t threads = 2;
};

// traces.retention, traces.max_bytes and traces.prune_interval_s; a retention that is not an age
// ("30d", "12h", "90m") is a configuration error (exit 2).
trace::RetentionConfig retention_settings() {
    const auto& s = settings();
    trace::RetentionConfig config;
    if (const std::string& age = s.text("traces.retention"); !age.empty()) {
        const auto ms = base::parse_duration_ms(age);
        if (!ms) {
            exit_with_error(base::make_error(
                base::ErrorType::kInvalidRequest,
                "traces.retention \"" + age +
                    "\" is not an age: a number and a unit, s, m, h, d or w (30d, 12h, 90m)"));
        }
        config.retention = std::chrono::milliseconds{*ms};
    }
    config.max_bytes = s.integer("traces.max_bytes");
    config.interval = std::chrono::seconds{s.integer("traces.prune_interval_s")};
    return config;
}

// The retention thread with its own read-write connection to the collector's store, when
// traces.retention or traces.max_bytes asks for one.
std::unique_ptr<trace::RetentionWorker> start_retention(
    const trace::StoreLocation& location, const trace::StoreConfig& store_config,
    const trace::RetentionConfig& config, std::shared_ptr<trace::RetentionCounters> counters) {
    if (!config.enabled()) return nullptr;
    auto store = trace::TraceStore::open(location, trace::OpenMode::kReadWrite, store_config);
    if (!store) exit_with_error(store.error());
    auto worker = std::make_unique<trace::RetentionWorker>(std::move(store).value(), config,
                                                           std::move(counters));
    worker->start();
    return worker;
}

// The sampling thread (docs/traces.md, "Sampling") with its own read-write connection to the
// collector's store, when traces.sample is under 1; a pass every traces.prune_interval_s.
std::unique_ptr<trace::SamplingWorker> start_sampling(const trace::StoreLocation& location,
                                                      const trace::StoreConfig& store_config) {
    trace::SamplingConfig config;
    config.fraction = store_config.sample;
    config.after = store_config.sample_after;
    config.interval = std::chrono::seconds{settings().integer("traces.prune_interval_s")};
    if (!config.enabled()) return nullptr;
    auto store = trace::TraceStore::open(location, trace::OpenMode::kReadWrite, store_config);
    if (!store) exit_with_error(store.error());
    auto worker = std::make_unique<trace::SamplingWorker>(std::move(store).value(), config);
    worker->start();
    return worker;
}

// The SPARQL mirror thread (docs/traces.md, "Mirror to a SPARQL engine") with its own read-write
// connection to the collector's store, when an engine is configured (sparql.endpoint).
std::unique_ptr<trace::SparqlMirror> start_mirror(const trace::StoreLocation& location,
                                                  const trace::StoreConfig& store_config,
                                                  const std::optional<http::SparqlConfig>& sparql,
                                                  std::shared_ptr<trace::MirrorCounters> counters) {
    if (!sparql) return nullptr;
    auto store = trace::TraceStore::open(location, trace::OpenMode::kReadWrite, store_config);
    if (!store) exit_with_error(store.error());
    auto client = std::make_shared<http::SparqlClient>(*sparql);
    trace::MirrorConfig config;
    config.interval = std::chrono::milliseconds{settings().integer("sparql.mirror_interval_ms")};
    auto mirror = std::make_unique<trace::SparqlMirror>(
        std::move(store).value(),
        [client](std::string_view graph, std::string_view ntriples) {
            return client->put_graph(graph, ntriples);
        },
        config, std::move(counters));
    mirror->start();
    return mirror;
}

// The OpenTelemetry exporter's configuration and counters (docs/operations.md, "OpenTelemetry").
struct OtelWiring {
    std::optional<trace::ExporterConfig> config;  // nullopt: no endpoint configured
    std::shared_ptr<trace::OtelCounters> counters;
};

// The exporter's settings; with an endpoint, `store` queues each ended run for it. Malformed
// otel.headers: a configuration error (exit 2), as every command reports it.
OtelWiring otel_settings(trace::StoreConfig& store) {
    const auto& s = settings();
    const std::string url =
        http::otel_traces_url(s.text("otel.endpoint"), s.text("otel.traces_endpoint"));
    if (url.empty()) return {std::nullopt, std::make_shared<trace::OtelCounters>()};
    trace::ExporterConfig config;
    config.url = url;
    auto headers = http::parse_otel_headers(s.text("otel.headers"));
    if (!headers) exit_with_error(headers.error());
    config.headers = std::move(headers).value();
    auto encoding = trace::otel_encoding(s.text("otel.protocol"));
    if (!encoding) exit_with_error(encoding.error());
    config.encoding = *encoding;
    config.interval = std::chrono::milliseconds{s.integer("otel.interval_ms")};
    config.timeout = std::chrono::milliseconds{s.integer("otel.timeout_ms")};
    config.max_queue = s.integer("otel.max_queue");
    store.export_otel = true;
    return {config, std::make_shared<trace::OtelCounters>(http::otel_public_url(url),
                                                          s.text("otel.protocol"))};
}

// The OpenTelemetry exporter thread with its own read-write connection to the collector's store,
// when an endpoint is configured.
std::unique_ptr<trace::OtelExporter> start_exporter(const trace::StoreLocation& location,
                                                    const trace::StoreConfig& store_config,
                                                    const OtelWiring& otel) {
    if (!otel.config) return nullptr;
    const auto& config = otel.config;
    // Its commits (claims, runs taken off the queue) need no sync to survive power loss: one lost
    // sends a run again.
    auto exporter_config = store_config;
    exporter_config.synchronous_full = false;
    auto store = trace::TraceStore::open(location, trace::OpenMode::kReadWrite, exporter_config);
    if (!store) exit_with_error(store.error());
    trace::otel::Resource resource;
    resource.service_name = settings().text("otel.service_name");
    auto exporter = std::make_unique<trace::OtelExporter>(
        std::move(store).value(), trace::otlp_batch_encoder(resource, config->encoding), *config,
        otel.counters);
    exporter->start();
    return exporter;
}

// The collector's store: <home>/traces.db, or the PostgreSQL database storage.* names.
trace::StoreLocation collector_store_location(const std::filesystem::path& home) {
    const auto storage = cli::required_storage_choice();
    trace::StoreLocation location;
    location.path = home / "traces.db";
    if (storage.backend == cli::StorageBackend::kPostgres) {
        location.postgres_dsn = storage.dsn;
        location.postgres_read_dsn = storage.read_dsn;
    }
    return location;
}

// The collector (GBE01, the only writer of <home>/traces.db) and the `trace` service (reads)
// in one process; SIGTERM/SIGINT stop both gracefully.
void run_trace_collector(const TraceCollectorOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    const auto home = cli::resolve_home(options.bus.home);
    const auto& s = settings();
    const std::string& endpoint = s.text("broker.endpoint");
    const std::chrono::milliseconds heartbeat{s.integer("broker.heartbeat_ms")};
    const int liveness = static_cast<int>(s.integer("broker.liveness"));
    // Created owner-only when missing; an existing home others can write is refused (exit 2).
    if (auto made = base::ensure_home_folder(home); !made) exit_with_error(made.error());

    trace::StoreConfig store_config;
    store_config.incomplete_after = std::chrono::seconds{s.integer("collector.incomplete_after_s")};
    store_config.synchronous_full = !s.boolean("collector.synchronous_normal");
    // With an engine configured, ingest queues each ended run for the SPARQL mirror.
    const auto sparql = sparql_config_from_settings();
    store_config.mirror_sparql = sparql.has_value();
    // Sampling (docs/traces.md, "Sampling"): stats reports the fraction; the thread below uses it.
    store_config.sample = s.number("traces.sample");
    store_config.sample_after = std::chrono::seconds{s.integer("traces.sample_after_s")};
    // Cost (docs/traces.md, "Cost"): ingest prices each model call (checked with the settings).
    auto prices = schema::parse_prices(s.text("costs.prices"), s.text("costs.currency"));
    if (!prices) exit_with_error(prices.error());
    store_config.prices = std::move(prices).value();
    const auto otel = otel_settings(store_config);  // OpenTelemetry: ingest queues ended runs
    const trace::StoreLocation location = collector_store_location(home);
    const trace::RetentionConfig retention = retention_settings();
    auto store = trace::TraceStore::open(location, trace::OpenMode::kReadWrite, store_config);
    if (!store) exit_with_error(store.error());
    auto retention_counters = std::make_shared<trace::RetentionCounters>(retention);
    auto mirror_counters = std::make_shared<trace::MirrorCounters>(sparql.has_value());

    zmq::context_t context{1};
    trace::CollectorConfig collector_config;
    collector_config.endpoint = endpoint;
    collector_config.curve =
        worker_curve_keys(options.bus, kCollectorKey, collector_config.endpoint);
    collector_config.heartbeat = heartbeat;
    collector_config.liveness = liveness;
    collector_config.window = static_cast<std::uint64_t>(s.integer("collector.window"));
    trace::Collector collector(context, collector_config, *store.value());

    runtime::WorkerConfig config;
    config.endpoint = endpoint;
    config.service = std::string(schema::services::kTrace);
    config.curve = collector_config.curve;
    config.threads = options.threads;
    config.heartbeat = heartbeat;
    config.liveness = liveness;
    config.worker_name = "trace-collector";
    auto pool = std::make_shared<trace::ReadStorePool>(location, store_config);
    // `stats` reports the collector's own counters too (store failures, deliveries not yet stored).
    runtime::Worker worker(context, config,
                           trace::make_trace_handler(
                               pool, [&collector] { return collector.stats(); }, retention_counters,
                               mirror_counters, otel.counters));

    std::thread collector_thread([&collector] { collector.run(); });
    worker.start();
    auto pruner = start_retention(location, store_config, retention, retention_counters);
    auto sampler = start_sampling(location, store_config);
    auto mirror = start_mirror(location, store_config, sparql, mirror_counters);
    auto exporter = start_exporter(location, store_config, otel);
    auto log = base::component_logger("trace-collector");
    log->info("event=started store={} backend={} endpoint={} threads={}", location.describe(),
              (*store)->backend(), config.endpoint, config.threads);
    const int signal = wait_for_stop_signal(stop_signals);
    log->info("event=signal signal={} action=graceful_stop", signal);
    if (pruner) pruner->stop();
    if (sampler) sampler->stop();
    if (mirror) mirror->stop();
    if (exporter) exporter->stop();
    worker.stop();
    collector.stop();
    collector_thread.join();
    worker.wait();
    const auto& counters = collector.counters();
    log->info("event=stopped stored={} duplicates={} quarantined={} acked={}",
              counters.stored.load(), counters.duplicates.load(), counters.quarantined.load(),
              counters.acked.load());
}

void add_trace_collector_command(CLI::App& command) {
    auto [sub, options] = add_command<TraceCollectorOptions>(
        command, "trace-collector",
        "Store the broker's explain feed in <home>/traces.db and serve the `trace` service",
        run_trace_collector);
    add_bus_options(*sub, options->bus,
                    "Home folder holding traces.db (default $GLASSBOX_HOME, else ~/.glassbox)");
    sub->add_option("--threads", options->threads, "Threads serving `trace` requests")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    add_setting_option(*sub, "collector.incomplete_after_s", "--incomplete-after-s");
    add_setting_option(*sub, "collector.window", "--window");
    add_setting_option(*sub, "traces.retention", "--retention");
    add_setting_option(*sub, "traces.max_bytes", "--max-bytes");
    add_setting_option(*sub, "traces.prune_interval_s", "--prune-interval-s");
    add_setting_flag(*sub, "collector.synchronous_normal", "--synchronous-normal", true,
                     "Commit without fsync per transaction (faster; the last commits may be lost "
                     "on power loss)");
}

}  // namespace

void add_worker_command(CLI::App& app) {
    auto* command =
        app.add_subcommand("worker", "Run one worker process (stops gracefully on SIGTERM/SIGINT)");
    command->require_subcommand(1);
    for (const auto& entry : kBuiltinWorkers) {
        auto options = std::make_shared<WorkerOptions>();
        auto* sub = command->add_subcommand(entry.name, entry.description);
        add_worker_options(*sub, *options, entry.name);
        const WorkerEntry* chosen = &entry;
        sub->callback([chosen, options] {
            const sigset_t stop_signals = block_stop_signals();
            run_worker(chosen->name, *options, chosen->make_handler(), stop_signals);
        });
    }
    add_trace_collector_command(*command);
    add_embeddings_worker_command(*command);
    add_store_worker_command(*command);
    add_llm_worker_command(*command);
    add_graph_rag_worker_command(*command);
    add_document_rag_worker_command(*command);
    add_agent_worker_command(*command);
    add_query_worker_command(*command);
}

}  // namespace glassbox::cli
