// `glassbox traces list|show|tail|export|stats|prune|pin|unpin`: reads traces back from the
// `trace` service, and its retention ops (docs/traces.md §3, "Retention").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "base/time_format.hpp"
#include "bus/bus_client.hpp"
#include "bus/explain_subscriber.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/render/table_render.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/trace_labels.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
namespace traces = cli::render;

// A time bound for --since/--until: an xsd:dateTime in UTC ("2026-11-22T10:00:00Z", the Z may
// be left out), a date ("2026-11-22", its midnight UTC), or an age ("90s", "15m", "2h", "7d",
// "1w": that long before now). The service compares the UTC strings it gets.
std::string time_bound(const std::string& text, const char* option) {
    static const std::regex kDate(R"(^\d{4}-\d{2}-\d{2}$)");
    static const std::regex kDateTime(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z?$)");
    static const std::regex kAge(R"(^(\d{1,9})(s|m|h|d|w)$)");
    std::smatch match;
    if (std::regex_match(text, kDate)) return text + "T00:00:00Z";
    if (std::regex_match(text, kDateTime)) {
        std::string bound = text;
        if (bound.back() != 'Z') bound += 'Z';
        if (bound.size() == std::string_view("2026-11-22T10:00Z").size())
            bound.insert(bound.size() - 1, ":00");
        return bound;
    }
    if (std::regex_match(text, match, kAge)) {
        const long long n = std::stoll(match[1].str());
        const char unit = match[2].str()[0];
        const long long seconds = unit == 's'   ? n
                                  : unit == 'm' ? n * 60
                                  : unit == 'h' ? n * 3600
                                  : unit == 'd' ? n * 86'400
                                                : n * 604'800;
        return base::format_xsd_datetime(std::chrono::system_clock::now() -
                                         std::chrono::seconds{seconds});
    }
    exit_with_error(
        make_error(ErrorType::kInvalidRequest,
                   std::string(option) + " '" + text +
                       "' is not a UTC time (2026-11-22T10:00:00Z), a date (2026-11-22) or an "
                       "age (90s, 15m, 2h, 7d, 1w)"));
}

// One request to the trace service; its FINAL body, which must be a JSON object.
json call_trace(const ClientOptions& options, const json& request) {
    return call_for_object(options, schema::services::kTrace, request);
}

// Asks the trace service and prints its reply: as received with --json, else decoded as `Reply`
// and rendered by render(reply) (a reply that does not decode: its error, exit 2).
template <typename Reply, typename Render>
void print_trace_reply(const ClientOptions& options, const json& request, Render&& render) {
    const json reply = call_trace(options, request);
    if (options.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    auto decoded = schema::decode<Reply>(reply);
    if (!decoded) exit_with_error(decoded.error());
    std::cout << render(*decoded) << std::flush;
}

// ---- list ---------------------------------------------------------------------------------

struct ListOptions {
    ClientOptions client;
    std::string kind;
    std::string status;
    std::string since;
    std::string until;
    std::string search;
    std::string parent;
    std::string collection;
    bool all = false;
    int limit = 50;
    int offset = 0;
    std::string after;
    bool exact_total = false;
    bool evaluated = false;
    // What the runs used, their text, whether a change affected them (docs/traces.md).
    std::string uses_source;
    std::string uses_document;
    std::string uses_fact;
    std::string entity;
    std::string model;
    std::string text;
    bool affected = false;
};

void run_list(const ListOptions& options) {
    json request{{"op", "list"}, {"limit", options.limit}, {"offset", options.offset}};
    if (!options.kind.empty()) request["kind"] = options.kind;
    if (!options.status.empty()) request["status"] = options.status;
    if (!options.since.empty()) request["since"] = time_bound(options.since, "--since");
    if (!options.until.empty()) request["until"] = time_bound(options.until, "--until");
    if (!options.search.empty()) request["search"] = options.search;
    if (!options.parent.empty()) request["parent"] = options.parent;
    if (!options.collection.empty()) request["collection"] = options.collection;
    if (options.all) request["include_subtraces"] = true;
    if (!options.after.empty()) request["after"] = options.after;
    if (options.exact_total) request["exact_total"] = true;
    if (options.evaluated) request["evaluated"] = true;
    for (const auto& [key, value] :
         {std::pair{"uses_source", &options.uses_source},
          std::pair{"uses_document", &options.uses_document},
          std::pair{"uses_fact", &options.uses_fact}, std::pair{"entity", &options.entity},
          std::pair{"model", &options.model}, std::pair{"text", &options.text}}) {
        if (!value->empty()) request[key] = *value;
    }
    if (options.affected) request["affected"] = true;
    print_trace_reply<schema::TraceSessionList>(options.client, request, [](const auto& list) {
        return traces::render_session_table(list);
    });
}

// ---- show ---------------------------------------------------------------------------------

// "N facts" / "1 source": a count and its noun.
std::string counted(std::size_t n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// The lines `traces show` starts with when knowledge changes affected the run (docs/traces.md,
// "Affected answers"): "Affected: 1 fact this answer used was removed by urn:… (replace, …)".
std::string affected_lines(const schema::TraceDetail& trace) {
    std::string out;
    for (const auto& a : trace.affected) {
        std::string what;
        if (!a.facts.empty()) what = counted(a.facts.size(), "fact");
        if (!a.sources.empty())
            what += (what.empty() ? "" : " and ") + counted(a.sources.size(), "source");
        if (what.empty()) what = "something";
        const bool one = a.facts.size() + a.sources.size() == 1;
        out += "Affected: " + what + " this answer used " + (one ? "was" : "were") +
               " removed by " + a.change + " (" + a.kind + ", " + a.at + ")\n";
        for (const auto& f : a.facts) out += "  removed fact: " + f + "\n";
        for (const auto& src : a.sources) out += "  removed source: " + src + "\n";
    }
    return out;
}

struct ShowOptions {
    ClientOptions client;
    std::string id;
    std::string format = "tree";
    bool show_sources = false;
    bool full = false;
    int depth = -1;  // sub-run levels expanded; -1: all
};

// How long `traces show` asks again for a trace the service does not have yet. A trace is stored
// moments after its answer (the broker's delivery batch, then the collector's group commit:
// ~60 ms, docs/traces.md), so `glassbox invoke` followed at once by `traces show <id>`, as its
// output suggests, can ask before it is there.
constexpr std::chrono::milliseconds kShowWaitsForStore{2'000};
constexpr std::chrono::milliseconds kShowAsksAgainEvery{100};

// The `show` reply for `id`. The service resolves a UUID prefix (NotFound / InvalidRequest listing
// the matches: exit 2); a NotFound is asked again for up to kShowWaitsForStore before it is final.
json shown_trace(const ClientOptions& options, const std::string& id) {
    const json request{{"op", "show"}, {"session", id}};
    const auto deadline = std::chrono::steady_clock::now() + kShowWaitsForStore;
    for (;;) {
        auto bodies = call_bodies(options, schema::services::kTrace, request);
        if (bodies) {
            if (bodies->empty() || !bodies->back().is_object()) {
                exit_with_error(make_error(ErrorType::kDecodeError,
                                           "the trace service's reply is not a JSON object"));
            }
            return std::move(bodies->back());
        }
        if (bodies.error().type != ErrorType::kNotFound ||
            std::chrono::steady_clock::now() >= deadline) {
            exit_with_error(bodies.error());
        }
        std::this_thread::sleep_for(kShowAsksAgainEvery);
    }
}

void run_show(const ShowOptions& options) {
    if (options.id.empty())
        exit_with_error(make_error(ErrorType::kInvalidRequest, "the trace id is empty"));
    const auto format =
        options.client.json
            ? traces::TraceFormat::kJson
            : traces::trace_format_from_string(options.format).value_or(traces::TraceFormat::kTree);
    const json reply = shown_trace(options.client, options.id);
    if (format == traces::TraceFormat::kJson) {
        std::cout << dump_json(reply, 2) << std::endl;
        return;
    }
    auto trace = schema::decode<schema::TraceDetail>(reply);
    if (!trace) exit_with_error(trace.error());
    switch (format) {
        case traces::TraceFormat::kTree: {
            traces::TreeOptions tree;
            tree.show_sources = options.show_sources;
            tree.full = options.full || options.show_sources;
            if (options.depth >= 0) tree.depth = static_cast<std::size_t>(options.depth);
            if (!tree.full) tree.labels = fetch_trace_labels(options.client, *trace);
            std::cout << affected_lines(*trace) << traces::render_tree(*trace, tree);
            break;
        }
        case traces::TraceFormat::kTurtle:
            std::cout << traces::render_turtle(schema::rdf::shown_triples(*trace));
            break;
        case traces::TraceFormat::kNTriples:
            std::cout << traces::render_ntriples(schema::rdf::shown_triples(*trace));
            break;
        case traces::TraceFormat::kNQuads:
            std::cout << traces::render_nquads(schema::rdf::shown_triples(*trace));
            break;
        case traces::TraceFormat::kJsonLd:
            std::cout << dump_json(traces::render_jsonld(schema::rdf::shown_triples(*trace)), 2)
                      << '\n';
            break;
        case traces::TraceFormat::kJson:
            break;
    }
    std::cout << std::flush;
}

// ---- tail ---------------------------------------------------------------------------------

struct TailOptions {
    ClientOptions client;
    std::string kind;
    std::uint64_t count = 0;  // 0: until stopped
    int run_ms = 0;           // 0: until stopped
};

std::atomic<bool> g_stop_tail{false};

extern "C" void request_tail_stop(int /*signal*/) { g_stop_tail.store(true); }

void run_tail(const TailOptions& options) {
    bus::ExplainSubscriberConfig config;
    config.endpoint = options.client.pub_endpoint();
    config.curve = options.client.curve_keys(config.endpoint);
    config.topic = options.kind.empty() ? "explain." : "explain." + options.kind;
    bus::ExplainSubscriber subscriber(config);

    g_stop_tail.store(false);
    struct sigaction action {};
    action.sa_handler = request_tail_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);

    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto limit = std::chrono::milliseconds{options.run_ms};
    std::uint64_t seen = 0;
    while (!g_stop_tail.load()) {
        if (options.count != 0 && seen >= options.count) return;
        if (options.run_ms > 0 && Clock::now() - started >= limit) break;
        auto event = subscriber.next(std::chrono::milliseconds{200});
        if (!event) {
            if (event.error().type == ErrorType::kTimeout) continue;
            exit_with_error(event.error());
        }
        // The topic filter is a prefix ("explain.echo" also matches "explain.echoes").
        if (!options.kind.empty() && event->service != options.kind) continue;
        const std::string received = base::format_xsd_datetime(std::chrono::system_clock::now());
        if (options.client.json) {
            std::cout << dump_json(traces::event_json(*event, received)) << std::endl;
        } else {
            std::cout << traces::render_event_line(*event, received) << std::endl;
        }
        ++seen;
    }
    if (options.count != 0 && seen < options.count && !g_stop_tail.load()) {
        exit_with_error(make_error(ErrorType::kTimeout,
                                   "saw " + std::to_string(seen) + " of " +
                                       std::to_string(options.count) + " explain events within " +
                                       std::to_string(options.run_ms) + " ms"));
    }
}

// ---- export -------------------------------------------------------------------------------

struct ExportOptions {
    ClientOptions client;
    std::string since;
    std::string until;
};

void run_export(const ExportOptions& options) {
    json request{{"op", "export"}, {"since", time_bound(options.since, "--since")}};
    if (!options.until.empty()) request["until"] = time_bound(options.until, "--until");
    bus::BusClientConfig config = options.client.bus_config();
    bus::BusClient bus(config);
    auto stream =
        bus::open_stream(bus, schema::services::kTrace, request.dump(), options.client.timeout());
    if (!stream) exit_with_error(stream.error());
    // The client's backstop (deadline + grace) ends the stream, so this wait always terminates.
    const auto wait = options.client.timeout() + config.deadline_grace + std::chrono::seconds{1};
    std::uint64_t lines = 0;
    for (;;) {
        auto reply = stream->next(wait);
        if (!reply) exit_with_error(reply.error());
        if (reply->kind == bus::ReplyKind::kError) exit_with_error(*reply->error);
        if (reply->kind == bus::ReplyKind::kData) {
            const auto it =
                reply->body.is_object() ? reply->body.find("nquads") : reply->body.end();
            if (!reply->body.is_object() || it == reply->body.end() || !it->is_string()) {
                exit_with_error(make_error(ErrorType::kDecodeError,
                                           "an export chunk has no \"nquads\" string"));
            }
            const auto& text = it->get_ref<const std::string&>();
            for (char c : text) lines += c == '\n' ? 1 : 0;
            std::cout << text;
            if (!text.empty() && text.back() != '\n') {
                std::cout << '\n';
                ++lines;
            }
            std::cout.flush();
        } else if (reply->kind == bus::ReplyKind::kFinal) {
            const json& body = reply->body;
            std::cerr << "exported "
                      << (body.is_object() ? dump_json(body.value("sessions", json())) : "?")
                      << " sessions, "
                      << (body.is_object() ? dump_json(body.value("triples", json())) : "?")
                      << " triples (" << lines << " N-Quads lines written)" << std::endl;
            return;
        }
    }
}

// ---- stats --------------------------------------------------------------------------------

std::string count(std::int64_t n) {
    return with_commas(static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)));
}

// An age in the largest unit that divides it: "30d", "12h", "90m", "45s".
std::string format_age(std::int64_t ms) {
    for (const auto& [unit, size] :
         {std::pair{'w', std::int64_t{604'800'000}}, std::pair{'d', std::int64_t{86'400'000}},
          std::pair{'h', std::int64_t{3'600'000}}, std::pair{'m', std::int64_t{60'000}}}) {
        if (ms % size == 0) return std::to_string(ms / size) + unit;
    }
    return std::to_string(ms / 1000) + "s";
}

// "Pruned 12 traces (30 runs, 410 events, 9,120 triples, 25 texts, 3 turns, 0 quarantined);
// 1,234,567 → 456,789 bytes".
std::string render_prune(const schema::TracePruneResult& r) {
    std::string out = r.dry_run ? "Would prune " : "Pruned ";
    out += count(r.traces) + (r.traces == 1 ? " trace (" : " traces (") + count(r.sessions) +
           " runs, " + count(r.events) + " events, " + count(r.triples) + " triples, " +
           count(r.texts) + " stored texts, " + count(r.turns) + " conversation turns, " +
           count(r.quarantined) + " quarantined messages)\n";
    out += std::string("Store: ") + count(r.bytes_before) + " bytes" +
           (r.dry_run ? ", about " : " -> ") + count(r.bytes_after) +
           (r.dry_run ? " bytes after\n" : " bytes\n");
    return out;
}

// How retention is set: "30d and 1,000,000 bytes", "forever".
std::string retention_text(const schema::TraceRetentionStats& r) {
    std::string out;
    if (r.retention_ms > 0) out = format_age(r.retention_ms);
    if (r.max_bytes > 0)
        out += (out.empty() ? "" : " and ") + with_commas(static_cast<std::uint64_t>(r.max_bytes)) +
               " bytes";
    return out.empty() ? "forever" : out;
}

// The trace store's counts, then the collector's, as aligned tables.
// The cost section (docs/traces.md, "Cost"): the total, each model with its tokens and the most
// recent days (`--json` has every day).
void add_cost_rows(const schema::TraceCosts& c, std::vector<traces::TableRow>& rows) {
    constexpr std::size_t kDaysShown = 7;
    rows.push_back({"Cost (" + c.currency + ")", {}});
    rows.push_back({"total", {traces::format_cost(c.total)}});
    for (const auto& m : c.by_model) {
        rows.push_back({"  " + traces::safe_text(m.model, false),
                        {m.cost ? traces::format_cost(m.cost) : "no price",
                         with_commas(static_cast<std::uint64_t>(m.input_tokens)) + " in / " +
                             with_commas(static_cast<std::uint64_t>(m.output_tokens)) + " out"}});
    }
    for (std::size_t i = 0; i < c.by_day.size() && i < kDaysShown; ++i)
        rows.push_back({"  " + c.by_day[i].day, {traces::format_cost(c.by_day[i].cost)}});
}

// Sampling (docs/traces.md, "Sampling"): the fraction kept whole, the decisions, the runs waiting.
void add_sampling_rows(const schema::TraceSamplingStats& s, std::vector<traces::TableRow>& rows) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", s.fraction);
    rows.push_back({"Sampling (top-level runs)", {}});
    rows.push_back({"traces.sample", {s.fraction < 1.0 ? fraction : "1 (off)"}});
    for (const auto& [name, n] :
         {std::pair{"whole: error", s.whole.error},
          std::pair{"whole: escalation", s.whole.escalation},
          std::pair{"whole: evaluated", s.whole.evaluated},
          std::pair{"whole: pinned", s.whole.pinned}, std::pair{"whole: sampled", s.whole.sampled},
          std::pair{"summarised", s.summarised}, std::pair{"waiting", s.waiting}})
        rows.push_back({name, {count(n)}});
}

std::vector<traces::TableRow> trace_stats_rows(const schema::TraceStats& stats) {
    std::vector<traces::TableRow> rows{{"Trace store", {}}, {"sessions", {count(stats.sessions)}}};
    // The statuses in the order a run goes through them, then any other the service names.
    std::vector<std::string> statuses{"running", "complete", "incomplete", "error"};
    for (const auto& [status, n] : stats.by_status)
        if (std::find(statuses.begin(), statuses.end(), status) == statuses.end())
            statuses.push_back(status);
    for (const auto& status : statuses) {
        const auto it = stats.by_status.find(status);
        rows.push_back({"  " + status, {count(it == stats.by_status.end() ? 0 : it->second)}});
    }
    rows.push_back({"events", {count(stats.events)}});
    rows.push_back({"triples", {count(stats.triples)}});
    rows.push_back({"stored texts", {count(stats.texts)}});
    rows.push_back({"quarantined messages", {count(stats.quarantined)}});
    rows.push_back({"on disk (bytes)", {with_commas(stats.db_bytes)}});
    if (const auto& c = stats.collector) {
        rows.push_back({"Collector (since it started)", {}});
        rows.push_back({"deliveries received", {with_commas(c->deliveries)}});
        rows.push_back({"events stored", {with_commas(c->stored)}});
        rows.push_back({"deliveries acked", {with_commas(c->acked)}});
        rows.push_back({"pending (not yet stored)", {with_commas(c->pending)}});
        rows.push_back({"store failures", {with_commas(c->store_failures)}});
        rows.push_back({"store failing", {c->store_failing ? "yes" : "no"}});
        rows.push_back(
            {"last store error", {c->last_store_error.empty() ? "-" : c->last_store_error}});
        rows.push_back({"IRIs rewritten", {with_commas(c->iris_rewritten)}});
        rows.push_back({"deliveries refused", {with_commas(c->refused)}});
    }
    if (const auto& r = stats.retention) {
        rows.push_back({"Retention (since it started)", {}});
        rows.push_back({"keep", {retention_text(*r)}});
        rows.push_back({"prunes", {with_commas(r->prunes)}});
        rows.push_back({"traces pruned", {with_commas(r->traces)}});
        rows.push_back({"runs pruned", {with_commas(r->sessions)}});
        rows.push_back({"events pruned", {with_commas(r->events)}});
        rows.push_back({"bytes freed", {with_commas(r->bytes)}});
        rows.push_back({"prune failures", {with_commas(r->failures)}});
        rows.push_back({"last prune error", {r->last_error.empty() ? "-" : r->last_error}});
    }
    if (const auto& m = stats.sparql_mirror; m && (m->configured || m->pending > 0)) {
        rows.push_back({"SPARQL mirror", {}});
        rows.push_back({"configured", {m->configured ? "yes" : "no"}});
        rows.push_back({"runs waiting", {count(m->pending)}});
        rows.push_back({"graphs written", {with_commas(m->mirrored)}});
        rows.push_back({"write failures", {with_commas(m->failures)}});
        rows.push_back({"last write error", {m->last_error.empty() ? "-" : m->last_error}});
        rows.push_back({"watermark", {base::format_xsd_datetime_ms(m->watermark)}});
    }
    if (stats.costs) add_cost_rows(*stats.costs, rows);
    if (stats.sampling) add_sampling_rows(*stats.sampling, rows);
    return rows;
}

void run_stats(const ClientOptions& options) {
    print_trace_reply<schema::TraceStats>(options, json{{"op", "stats"}}, [](const auto& stats) {
        return traces::render_rows(trace_stats_rows(stats));
    });
}

// ---- prune, pin, unpin --------------------------------------------------------------------

struct PruneOptions {
    ClientOptions client;
    std::string older_than;
    std::int64_t max_bytes = 0;
    bool dry_run = false;
};

void run_prune(const PruneOptions& options) {
    json request{{"op", "prune"}, {"dry_run", options.dry_run}};
    if (!options.older_than.empty()) {
        if (!base::parse_duration_ms(options.older_than)) {
            exit_with_error(make_error(ErrorType::kInvalidRequest,
                                       "--older-than '" + options.older_than +
                                           "' is not an age: a number and a unit, s, m, h, d or "
                                           "w (30d, 12h, 90m)"));
        }
        request["older_than"] = options.older_than;
    }
    if (options.max_bytes > 0) request["max_bytes"] = options.max_bytes;
    if (options.older_than.empty() && options.max_bytes == 0) {
        exit_with_error(make_error(ErrorType::kInvalidRequest,
                                   "traces prune needs --older-than AGE or --max-bytes N"));
    }
    print_trace_reply<schema::TracePruneResult>(
        options.client, request, [](const auto& result) { return render_prune(result); });
}

struct PinOptions {
    ClientOptions client;
    std::string id;
};

void run_pin(const PinOptions& options, bool pinned) {
    const json reply =
        call_trace(options.client, json{{"op", pinned ? "pin" : "unpin"}, {"session", options.id}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    auto result = schema::decode<schema::TracePinned>(reply);
    if (!result) exit_with_error(result.error());
    std::cout << (result->pinned ? "Pinned " : "Unpinned ") << result->session
              << (result->pinned ? " (never pruned)" : "") << '\n';
    // docs/traces.md, "Sampling": a pin keeps what is stored; a summary's detail is gone.
    if (result->summary.value_or(false))
        std::cout << "It stays a summary: its detail was not kept (traces.sample)\n";
    std::cout << std::flush;
}

// `traces mirror --all`: queues every ended top-level run for the SPARQL mirror.
struct MirrorOptions {
    ClientOptions client;
    bool all = false;
};

void run_mirror(const MirrorOptions& options) {
    const json reply = call_trace(options.client, json{{"op", "mirror"}, {"all", options.all}});
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto queued = reply.is_object() ? reply.find("queued") : reply.end();
    if (queued == reply.end() || !queued->is_number_integer())
        exit_with_error(make_error(ErrorType::kInternal, "the mirror reply has no \"queued\""));
    std::cout << "Queued " << count(queued->get<std::int64_t>())
              << " traces for the SPARQL mirror\n"
              << std::flush;
}

// `traces prune`, `pin` and `unpin`.
void add_retention(CLI::App& traces_cmd) {
    auto [prune_cmd, prune] = add_command<PruneOptions>(
        traces_cmd, "prune",
        "Delete whole traces (with their sub-runs) started before an age, or the oldest until the "
        "store is under a size; pinned and running traces stay",
        run_prune);
    prune_cmd->add_option("--older-than", prune->older_than,
                          "Traces started longer ago than this age (30d, 12h, 90m)");
    prune_cmd
        ->add_option("--max-bytes", prune->max_bytes,
                     "Then the oldest until the store holds at most this many bytes")
        ->check(CLI::NonNegativeNumber);
    prune_cmd->add_flag("--dry-run", prune->dry_run, "Count what would go, delete nothing");
    add_client_options(*prune_cmd, prune->client, 600'000);
    for (const bool pinned : {true, false}) {
        auto options = std::make_shared<PinOptions>();
        auto* cmd = traces_cmd.add_subcommand(
            pinned ? "pin" : "unpin",
            pinned ? "Keep a trace from ever being pruned" : "Let a pinned trace be pruned again");
        cmd->add_option("id", options->id, "Session URI, or a unique prefix of its UUID")
            ->required();
        add_client_options(*cmd, options->client);
        cmd->callback([options, pinned] { run_pin(*options, pinned); });
    }
}

// `traces list`: the filters, paging and count.
void add_list(CLI::App& traces_cmd) {
    auto [list_cmd, list] = add_command<ListOptions>(
        traces_cmd, "list",
        "List sessions, newest first: Session | Kind | Collection | Question | Started | Duration "
        "| Tokens | Status | Sub-runs, and Eval when a run listed has an evaluation",
        run_list);
    list_cmd->add_option("--kind", list->kind,
                         "Only this kind (echo, graph-rag, document-rag, agent, query)");
    list_cmd->add_option("--status", list->status, "Only this status")
        ->check(CLI::IsMember({"running", "complete", "error", "incomplete"}));
    list_cmd->add_option("--since", list->since,
                         "Started at or after: UTC time, date, or age (2h, 7d)");
    list_cmd->add_option("--until", list->until, "Started before: UTC time, date, or age");
    list_cmd->add_option("--search", list->search, "Text in the question");
    list_cmd->add_option("--parent", list->parent, "Only the sub-traces of this session");
    list_cmd->add_flag("--all", list->all, "Include sub-traces");
    list_cmd->add_option("--collection", list->collection,
                         "Only the runs that queried this collection");
    list_cmd->add_flag("--evaluated", list->evaluated,
                       "Only the runs with an evaluation (glassbox eval), with their score (EVAL)");
    // What the runs used (docs/traces.md, "Which answers rest on what"); a sub-run's uses count
    // for its top-level run.
    list_cmd->add_option("--uses-source", list->uses_source,
                         "Only the runs that used facts or chunks of this source (its URI)");
    list_cmd->add_option("--uses-document", list->uses_document,
                         "Only the runs that used this document or chunk (its URI)");
    list_cmd->add_option("--uses-fact", list->uses_fact,
                         "Only the runs that used this fact: 'S P O' (N-Triples terms, or IRIs "
                         "and a plain literal)");
    list_cmd->add_option("--entity", list->entity,
                         "Only the runs whose used facts or seeds name this entity (an IRI)");
    list_cmd->add_option("--model", list->model, "Only the runs a step of which used this model");
    list_cmd->add_option("--text", list->text,
                         "Only the runs whose question or answer holds every one of these words");
    list_cmd->add_flag("--affected", list->affected,
                       "Only the runs a knowledge change affected (removed a fact or source they "
                       "used; AFFECTED in STATUS)");
    // The trace service's own bound: a larger limit is refused here, naming the range.
    list_cmd->add_option("--limit", list->limit, "At most this many sessions")
        ->capture_default_str()
        ->check(CLI::Range(1, static_cast<int>(glassbox::trace::kMaxListLimit)));
    list_cmd->add_option("--after", list->after,
                         "Page after this cursor (printed under each full page)");
    list_cmd->add_flag(
        "--exact-total", list->exact_total,
        "Count every matching session (slower; by default the count stops at 10,000)");
    list_cmd->add_option("--offset", list->offset, "Skip this many")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    add_client_options(*list_cmd, list->client);
}

// `traces show`: the tree, --full, --depth, the formats.
void add_show(CLI::App& traces_cmd) {
    auto [show_cmd, show] = add_command<ShowOptions>(
        traces_cmd, "show",
        "Show one trace: its steps and facts (tree), its reply (json), or its exact triples "
        "(turtle, ntriples, jsonld: the triples of urn:graph:retrieval; nquads keeps the graph)",
        run_show);
    show_cmd->add_option("id", show->id, "Session URI, or a unique prefix of its UUID")->required();
    show_cmd->add_option("--format", show->format, "tree, json, turtle, ntriples, nquads or jsonld")
        ->capture_default_str()
        ->check(CLI::IsMember({"tree", "json", "turtle", "ntriples", "nquads", "jsonld"}));
    show_cmd->add_flag(
        "--full", show->full,
        "Tree: every stored fact of every step (explored edges, reasoning, sources), "
        "not the summary");
    show_cmd
        ->add_option("--depth", show->depth,
                     "Tree: levels of sub-runs to expand (0: none, each on one line; default: all)")
        ->check(CLI::Range(0, schema::kMaxTraceDepth));
    show_cmd->add_flag(
        "--show-sources", show->show_sources,
        "Tree: the full tree with the source chunk, document and data tier of each selected edge "
        "and chunk");
    add_client_options(*show_cmd, show->client);
}

// `traces tail`, `export` and `stats`.
void add_tail_export_stats(CLI::App& traces_cmd) {
    auto [tail_cmd, tail] = add_command<TailOptions>(
        traces_cmd, "tail",
        "Print explain events live from the broker's explain topic until Ctrl-C (one line each, or "
        "JSON lines with --json); events published before it connected are not seen",
        run_tail);
    tail_cmd->add_option("--kind", tail->kind, "Only this service's events");
    tail_cmd->add_option("--count", tail->count,
                         "Stop after this many events (exit 1 if --timeout-ms passes first)");
    tail_cmd->add_option("--timeout-ms", tail->run_ms, "Stop after this long (0: until stopped)")
        ->capture_default_str()
        ->check(CLI::Range(0, 86'400'000));
    add_client_options(*tail_cmd, tail->client, 30'000, ClientOptionSet{true, false});

    auto [export_cmd, exporter] = add_command<ExportOptions>(
        traces_cmd, "export",
        "Write the exact stored triples of every session started in a range to stdout as N-Quads "
        "(a summary goes to stderr)",
        run_export);
    export_cmd
        ->add_option("--since", exporter->since,
                     "Started at or after: UTC time, date, or age (2h, 7d)")
        ->required();
    export_cmd->add_option("--until", exporter->until, "Started before: UTC time, date, or age");
    add_client_options(*export_cmd, exporter->client, 300'000);

    auto [stats_cmd, stats] = add_command<ClientOptions>(
        traces_cmd, "stats",
        "Counts of the trace store: sessions by status, events, triples, quarantined messages, "
        "size",
        run_stats);
    add_client_options(*stats_cmd, *stats);

    auto [mirror_cmd, mirror] = add_command<MirrorOptions>(
        traces_cmd, "mirror",
        "Queue every ended trace for the SPARQL mirror (traces stored while no engine was "
        "configured; docs/traces.md)",
        run_mirror);
    mirror_cmd->add_flag("--all", mirror->all, "Every ended top-level trace (required)")
        ->required();
    add_client_options(*mirror_cmd, mirror->client);
}

}  // namespace

void add_traces_command(CLI::App& app) {
    auto* traces_cmd =
        app.add_subcommand("traces",
                           "Read explain traces back: list, show, tail, export, stats; prune, pin, "
                           "unpin; diff two runs, replay one");
    traces_cmd->require_subcommand(1);
    add_list(*traces_cmd);
    add_show(*traces_cmd);
    add_tail_export_stats(*traces_cmd);
    add_retention(*traces_cmd);
    add_traces_compare(*traces_cmd);
}

}  // namespace glassbox::cli
