// The `trace` service: request parsing and dispatch to the trace store's read queries.
#include "workers/trace_collector/trace_service.hpp"

#include "base/spelling.hpp"
#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/trace_compare.hpp"

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace glassbox::trace {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;

// The largest `older_than` in milliseconds: 100 years.
constexpr std::int64_t kMaxPruneAgeMs = std::int64_t{100} * 365 * 86'400'000;
constexpr auto kSettlePoll = std::chrono::milliseconds(5);
// How long an event the broker has sent may take to reach the collector's batch.
constexpr auto kInFlight = std::chrono::milliseconds(10);
constexpr std::string_view kOps =
    "list, show, export, stats, turns, conversations, forget, prune, pin, unpin, evaluate, "
    "compare, mirror, eval_record, eval_list, eval_show, eval_chart";

base::Error invalid(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

Result<std::optional<std::string>> optional_string(const json& body, const char* key) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return std::optional<std::string>{};
    if (!it->is_string()) return invalid(std::string("\"") + key + "\" must be a string");
    return std::optional<std::string>{it->get<std::string>()};
}

Result<std::optional<std::int64_t>> optional_time(const json& body, const char* key) {
    auto text = optional_string(body, key);
    if (!text) return text.error();
    if (!*text) return std::optional<std::int64_t>{};
    const auto ms = base::parse_xsd_datetime_ms(**text);
    if (!ms)
        return invalid(std::string("\"") + key +
                       "\" must be an xsd:dateTime such as 2026-11-22T00:00:00Z");
    return std::optional<std::int64_t>{ms};
}

Result<std::int64_t> bounded_integer(const json& body, const char* key, std::int64_t fallback,
                                     std::int64_t min, std::int64_t max) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_number_integer()) return invalid(std::string("\"") + key + "\" must be an integer");
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
        return invalid(std::string("\"") + key + "\" must be from " + std::to_string(min) + " to " +
                       std::to_string(max));
    }
    const auto v = it->get<std::int64_t>();
    if (v < min || v > max) {
        return invalid(std::string("\"") + key + "\" must be from " + std::to_string(min) + " to " +
                       std::to_string(max));
    }
    return v;
}

// The store's reply checked against the contract's type T (schema/messages_trace.hpp): what
// leaves the service has the shape the CLI decodes, or is an Internal error. The reply is sent
// as the store wrote it (tests check that it is byte for byte T's encoding); encoding the
// decoded struct again would only cost a second pass over every list and trace.
template <typename T>
Result<json> as_reply(Result<json> stored) {
    if (!stored) return stored.error();
    if (auto typed = schema::decode<T>(*stored); !typed) {
        return make_error(ErrorType::kInternal, "trace store reply does not match the contract: " +
                                                    typed.error().message);
    }
    return stored;
}

Result<json> list(TraceStore& store, const json& body) {
    ListQuery q;
    auto kind = optional_string(body, "kind");
    auto collection = optional_string(body, "collection");
    auto status = optional_string(body, "status");
    auto search = optional_string(body, "search");
    auto parent = optional_string(body, "parent");
    auto after = optional_string(body, "after");
    auto since = optional_time(body, "since");
    auto until = optional_time(body, "until");
    auto limit = bounded_integer(body, "limit", kDefaultListLimit, 1, kMaxListLimit);
    auto offset = bounded_integer(body, "offset", 0, 0, std::numeric_limits<std::int64_t>::max());
    for (const auto* r : {&kind, &collection, &status, &search, &parent, &after}) {
        if (!*r) return r->error();
    }
    for (const auto* r : {&since, &until}) {
        if (!*r) return r->error();
    }
    if (!limit) return limit.error();
    if (!offset) return offset.error();
    for (auto [key, flag] :
         {std::pair{"include_subtraces", &q.include_subtraces},
          std::pair{"exact_total", &q.exact_total}, std::pair{"evaluated", &q.evaluated},
          std::pair{"affected", &q.affected}}) {
        if (const auto it = body.find(key); it != body.end() && !it->is_null()) {
            if (!it->is_boolean())
                return invalid(std::string("\"") + key + "\" must be true or false");
            *flag = it->get<bool>();
        }
    }
    q.kind = *kind;
    q.collection = *collection;
    q.status = *status;
    q.search = *search;
    q.parent = *parent;
    q.after = *after;
    q.since_ms = *since;
    q.until_ms = *until;
    q.limit = *limit;
    q.offset = *offset;
    // What the runs used (docs/traces.md, "Which answers rest on what").
    for (auto [key, slot] :
         {std::pair{"uses_source", &q.uses_source}, std::pair{"uses_document", &q.uses_document},
          std::pair{"uses_fact", &q.uses_fact}, std::pair{"entity", &q.entity},
          std::pair{"model", &q.model}, std::pair{"text", &q.text}}) {
        auto value = optional_string(body, key);
        if (!value) return value.error();
        if (*value && (*value)->empty())
            return invalid(std::string("\"") + key + "\" must not be empty");
        *slot = std::move(*value);
    }
    return as_reply<schema::TraceSessionList>(store.list(q));
}

Result<json> show(TraceStore& store, const json& body) {
    auto session = optional_string(body, "session");
    if (!session) return session.error();
    if (!*session || (*session)->empty())
        return invalid("show needs \"session\": a session URI or a UUID prefix");
    return as_reply<schema::TraceDetail>(store.show(**session));
}

Result<json> export_range(TraceStore& store, const json& body,
                          const std::function<bool(const json&)>& partial) {
    auto since = optional_time(body, "since");
    if (!since) return since.error();
    auto until = optional_time(body, "until");
    if (!until) return until.error();
    auto counts = store.export_nquads(*since, *until, [&](std::string_view lines) {
        return partial(json{{"nquads", std::string(lines)}});
    });
    if (!counts) return counts.error();
    return schema::encode(schema::TraceExportCounts{counts->sessions, counts->triples});
}

// The conversation a turns or forget request names: a non-empty string of at most
// schema::kMaxSessionIdBytes bytes.
Result<std::string> session_id(const json& body) {
    auto id = optional_string(body, "session_id");
    if (!id) return id.error();
    if (!*id || (*id)->empty())
        return invalid("\"session_id\" must name the conversation (a non-empty string)");
    if ((*id)->size() > schema::kMaxSessionIdBytes) {
        return invalid("\"session_id\" must be at most " +
                       std::to_string(schema::kMaxSessionIdBytes) + " bytes");
    }
    return std::move(**id);
}

// NotFound for a conversation that has no turns, naming the nearest of the recent ones.
base::Error not_found_conversation(TraceStore& store, const std::string& id) {
    std::vector<std::string> ids;
    if (auto recent = store.conversations(kMaxConversationsLimit);
        recent && recent->contains("sessions")) {
        for (const auto& s : (*recent)["sessions"])
            if (s.is_object() && s.contains("session_id") && s["session_id"].is_string())
                ids.push_back(s["session_id"]);
    }
    return make_error(ErrorType::kNotFound,
                      "no conversation \"" + base::printable_utf8(id.substr(0, 100)) + "\"" +
                          base::did_you_mean(id, ids) + " (glassbox sessions list shows them)");
}

// `settle_ms`: while another run of the conversation than `current` is still running, its turn
// is yet to come (its answer can reach the asker before its trace reaches the store): wait for
// it, polling the store, at most that long (issue 31: a piped chat's follow-up).
Result<void> settle(TraceStore& store, const std::string& conversation, const json& body,
                    const CollectorStatsSource& collector_stats) {
    auto wait_ms = bounded_integer(body, "settle_ms", 0, 0, schema::kMaxTurnsSettleMs);
    if (!wait_ms) return wait_ms.error();
    auto current = optional_string(body, "current");
    if (!current) return current.error();
    if (*wait_ms == 0) return {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*wait_ms);
    // A run quicker than the collector's batch is not in the store at all yet: first every event
    // the collector beside this service has received (after a moment for those in flight from
    // the broker) is committed, then the conversation's runs seen running are waited for.
    if (collector_stats) {
        std::this_thread::sleep_for(kInFlight);
        const auto received = collector_stats().deliveries;
        while (collector_stats().acked < received && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(kSettlePoll);
    }
    while (true) {
        auto running = store.conversation_running(conversation, current->value_or(""));
        if (!running) return running.error();
        if (!*running || std::chrono::steady_clock::now() >= deadline) return {};
        std::this_thread::sleep_for(kSettlePoll);
    }
}

Result<json> turns(TraceStore& store, const json& body,
                   const CollectorStatsSource& collector_stats) {
    auto id = session_id(body);
    if (!id) return id.error();
    auto limit = bounded_integer(body, "limit", kDefaultTurnsLimit, 1, kMaxTurnsLimit);
    if (!limit) return limit.error();
    if (auto settled = settle(store, *id, body, collector_stats); !settled) return settled.error();
    // `strict`: a person asked for this conversation by name, and a typo is no empty one.
    const auto strict = body.find("strict");
    if (strict != body.end() && !strict->is_null() && !strict->is_boolean())
        return invalid("\"strict\" must be true or false");
    if (strict != body.end() && strict->is_boolean() && strict->get<bool>()) {
        auto known = store.conversation_known(*id);
        if (!known) return known.error();
        if (!*known) return not_found_conversation(store, *id);
    }
    return as_reply<schema::ConversationTurns>(store.turns(*id, *limit));
}

Result<json> conversations(TraceStore& store, const json& body) {
    auto limit =
        bounded_integer(body, "limit", kDefaultConversationsLimit, 1, kMaxConversationsLimit);
    if (!limit) return limit.error();
    return as_reply<schema::ConversationList>(store.conversations(*limit));
}

Result<json> forget(TraceStore& store, const json& body) {
    auto id = session_id(body);
    if (!id) return id.error();
    return as_reply<schema::ConversationForgotten>(store.forget(*id));
}

Result<json> stats(TraceStore& store, const CollectorStatsSource& collector_stats,
                   RetentionCounters* retention, const MirrorCounters* mirror,
                   const OtelCounters* otel) {
    auto stored = store.stats();
    if (stored && collector_stats) (*stored)["collector"] = schema::encode(collector_stats());
    if (stored && retention) (*stored)["retention"] = schema::encode(retention->snapshot());
    if (stored && mirror) {
        auto backlog = store.mirror_backlog();
        if (!backlog) return backlog.error();
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        (*stored)["sparql_mirror"] = schema::encode(mirror->snapshot(*backlog, now));
    }
    if (stored && otel) {
        auto pending = store.otel_backlog();
        if (!pending) return pending.error();
        (*stored)["otel"] = schema::encode(otel->snapshot(*pending));
    }
    return as_reply<schema::TraceStats>(std::move(stored));
}

// `older_than`: an age ("30d", "12h", "90m") or milliseconds; nullopt when absent.
Result<std::optional<std::chrono::milliseconds>> older_than(const json& body) {
    const auto it = body.find("older_than");
    if (it == body.end() || it->is_null()) return std::optional<std::chrono::milliseconds>{};
    const auto bad = [] {
        return invalid(
            "\"older_than\" must be an age such as \"30d\", \"12h\" or \"90m\" (s, m, h, d, w), "
            "or a positive number of milliseconds");
    };
    if (it->is_string()) {
        const auto ms = base::parse_duration_ms(it->get<std::string>());
        if (!ms) return bad();
        return std::optional(std::chrono::milliseconds{*ms});
    }
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() &&
         it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxPruneAgeMs)))
        return bad();
    const auto ms = it->get<std::int64_t>();
    if (ms <= 0 || ms > kMaxPruneAgeMs) return bad();
    return std::optional(std::chrono::milliseconds{ms});
}

Result<json> prune(TraceStore& store, const json& body, RetentionCounters* retention) {
    PruneRequest request;
    auto age = older_than(body);
    if (!age) return age.error();
    request.older_than = *age;
    auto max_bytes =
        bounded_integer(body, "max_bytes", 0, 0, std::numeric_limits<std::int64_t>::max());
    if (!max_bytes) return max_bytes.error();
    if (*max_bytes > 0) request.max_bytes = *max_bytes;
    if (const auto it = body.find("dry_run"); it != body.end() && !it->is_null()) {
        if (!it->is_boolean()) return invalid("\"dry_run\" must be true or false");
        request.dry_run = it->get<bool>();
    }
    if (!request.older_than && !request.max_bytes)
        return invalid("prune needs \"older_than\" (an age such as \"30d\") or \"max_bytes\"");
    auto counts = store.prune(request);
    if (!counts) return counts.error();
    if (retention && !request.dry_run) retention->add(*counts);
    return schema::encode(
        schema::TracePruneResult{request.dry_run, counts->traces, counts->sessions, counts->events,
                                 counts->triples, counts->texts, counts->turns, counts->quarantined,
                                 counts->bytes_before, counts->bytes_after});
}

Result<json> pin(TraceStore& store, const json& body, bool pinned) {
    auto session = optional_string(body, "session");
    if (!session) return session.error();
    if (!*session || (*session)->empty())
        return invalid(std::string(pinned ? "pin" : "unpin") +
                       " needs \"session\": a session URI or a UUID prefix");
    return as_reply<schema::TracePinned>(store.pin(**session, pinned));
}

// `mirror` (docs/traces.md, "Mirror to a SPARQL engine"): {"all": true} queues every ended
// top-level run for the SPARQL mirror; answers {"queued": N}.
Result<json> queue_mirror_all(TraceStore& store, const json& body) {
    const auto all = body.find("all");
    if (all == body.end() || !all->is_boolean() || !all->get<bool>())
        return invalid("mirror needs \"all\": true (every ended top-level run)");
    auto queued = store.mirror_all();
    if (!queued) return queued.error();
    return json{{"queued", *queued}};
}

// ---- evaluate ----------------------------------------------------------------------------

// A text of an evaluation: a UTF-8 string of at most `max` bytes, non-empty when `required`.
Result<std::optional<std::string>> evaluation_text(const json& e, const char* key, bool required,
                                                   std::size_t max) {
    const std::string name = std::string("\"evaluation.") + key + "\"";
    auto text = optional_string(e, key);
    if (!text) return invalid(name + " must be a string");
    if (required && (!*text || (*text)->empty()))
        return invalid(name + " must be a non-empty string");
    if (*text && ((*text)->size() > max || base::find_invalid_utf8(**text)))
        return invalid(name + " must be UTF-8 of at most " + std::to_string(max) + " bytes");
    return text;
}

// A score of an evaluation: absent, null, or a number in [0, 1].
Result<std::optional<double>> evaluation_share(const json& e, const char* key) {
    const auto it = e.find(key);
    if (it == e.end() || it->is_null()) return std::optional<double>{};
    if (!it->is_number() || it->get<double>() < 0.0 || it->get<double>() > 1.0)
        return invalid(std::string("\"evaluation.") + key + "\" must be a number from 0 to 1");
    return std::optional(it->get<double>());
}

Result<std::optional<bool>> evaluation_flag(const json& e, const char* key, bool required) {
    const auto it = e.find(key);
    if ((it == e.end() || it->is_null()) && !required) return std::optional<bool>{};
    if (it == e.end() || !it->is_boolean())
        return invalid(std::string("\"evaluation.") + key + "\" must be true or false");
    return std::optional(it->get<bool>());
}

Result<std::vector<std::string>> evaluation_answers(const json& e) {
    const auto it = e.find("answers");
    std::vector<std::string> out;
    if (it == e.end() || it->is_null()) return out;
    const auto bad = [] {
        return invalid("\"evaluation.answers\" must be a list of at most " +
                       std::to_string(schema::kMaxEvaluationAnswers) +
                       " UTF-8 strings of at most " +
                       std::to_string(schema::kMaxEvaluationAnswerBytes) + " bytes");
    };
    if (!it->is_array() || it->size() > schema::kMaxEvaluationAnswers) return bad();
    for (const auto& answer : *it) {
        if (!answer.is_string()) return bad();
        const auto& text = answer.get_ref<const std::string&>();
        if (text.size() > schema::kMaxEvaluationAnswerBytes || base::find_invalid_utf8(text))
            return bad();
        out.push_back(text);
    }
    return out;
}

// The request's `evaluation`, checked field by field (InvalidRequest naming the field).
Result<schema::TraceEvaluation> evaluation_request(const json& body) {
    const auto it = body.find("evaluation");
    if (it == body.end() || !it->is_object())
        return invalid("evaluate needs \"evaluation\": an object with run, set and correct");
    const json& e = *it;
    schema::TraceEvaluation out;
    auto run = evaluation_text(e, "run", true, schema::kMaxEvaluationNameBytes);
    auto set = evaluation_text(e, "set", true, schema::kMaxEvaluationNameBytes);
    auto question = evaluation_text(e, "question_id", false, schema::kMaxEvaluationNameBytes);
    for (const auto* r : {&run, &set, &question})
        if (!*r) return r->error();
    auto correct = evaluation_flag(e, "correct", true);
    auto hit = evaluation_flag(e, "hit", false);
    for (const auto* r : {&correct, &hit})
        if (!*r) return r->error();
    auto exact = evaluation_share(e, "exact_match");
    auto f1 = evaluation_share(e, "f1");
    auto confidence = evaluation_share(e, "confidence");
    for (const auto* r : {&exact, &f1, &confidence})
        if (!*r) return r->error();
    auto answers = evaluation_answers(e);
    if (!answers) return answers.error();
    out.run = std::move(**run);
    out.set = std::move(**set);
    out.question_id = std::move(*question);
    out.answers = std::move(*answers);
    out.correct = **correct;
    out.hit = *hit;
    out.exact_match = *exact;
    out.f1 = *f1;
    out.confidence = *confidence;
    return out;
}

// `settle_ms`: a run's answer reaches its asker before its trace reaches the store (the
// collector writes in batches), so an evaluation made at once may wait that long, at most
// schema::kMaxTurnsSettleMs, for the session to be stored.
Result<void> settle_session(TraceStore& store, const std::string& session, const json& body) {
    auto wait_ms = bounded_integer(body, "settle_ms", 0, 0, schema::kMaxTurnsSettleMs);
    if (!wait_ms) return wait_ms.error();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*wait_ms);
    while (true) {
        auto found = store.resolve_session(session);
        if (found || found.error().type != ErrorType::kNotFound) return {};
        if (std::chrono::steady_clock::now() >= deadline) return {};
        std::this_thread::sleep_for(kSettlePoll);
    }
}

Result<json> evaluate(TraceStore& store, const json& body) {
    auto session = optional_string(body, "session");
    if (!session) return session.error();
    if (!*session || (*session)->empty())
        return invalid("evaluate needs \"session\": a session URI or a UUID prefix");
    auto evaluation = evaluation_request(body);
    if (!evaluation) return evaluation.error();
    if (auto settled = settle_session(store, **session, body); !settled) return settled.error();
    return as_reply<schema::TraceEvaluated>(store.evaluate(**session, *evaluation));
}

// ---- compare ------------------------------------------------------------------------------

// How often `compare` looks again for runs still running while it settles.
constexpr auto kComparePoll = std::chrono::milliseconds(20);

// Whether the run `id` names is stored and has ended (any status but running).
bool run_ended(TraceStore& store, const std::string& id) {
    auto shown = store.show(id);
    if (!shown || !shown->is_object() || !shown->contains("session")) return false;
    const json& session = (*shown)["session"];
    return session.is_object() && session.value("status", "running") != "running";
}

// `settle_ms`: a run's answer reaches its asker before its trace is whole in the store (the
// collector writes in batches): `traces replay` compares the run it just asked, so the op may
// wait that long, at most schema::kMaxTurnsSettleMs, for both runs to be stored and ended.
Result<json> compare(TraceStore& store, const json& body) {
    auto a = optional_string(body, "a");
    if (!a) return a.error();
    auto b = optional_string(body, "b");
    if (!b) return b.error();
    if (!*a || (*a)->empty() || !*b || (*b)->empty())
        return invalid("compare needs \"a\" and \"b\": session URIs or UUID prefixes");
    auto wait_ms = bounded_integer(body, "settle_ms", 0, 0, schema::kMaxTurnsSettleMs);
    if (!wait_ms) return wait_ms.error();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*wait_ms);
    while (*wait_ms > 0 && std::chrono::steady_clock::now() < deadline &&
           !(run_ended(store, **a) && run_ended(store, **b))) {
        std::this_thread::sleep_for(kComparePoll);
    }
    return as_reply<schema::TraceComparison>(compare_traces(store, **a, **b));
}

}  // namespace

ReadStorePool::ReadStorePool(StoreLocation location, StoreConfig config)
    : location_(std::move(location)), config_(config) {}

Result<json> ReadStorePool::with_writer(const std::function<Result<json>(TraceStore&)>& use) {
    std::lock_guard lock(writer_mutex_);
    if (!writer_) {
        auto opened = TraceStore::open(location_, OpenMode::kReadWrite, config_);
        if (!opened) return opened.error();
        writer_ = std::move(opened).value();
    }
    return use(*writer_);
}

Result<json> ReadStorePool::with_store(const std::function<Result<json>(TraceStore&)>& use) {
    std::unique_ptr<TraceStore> store;
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            store = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (!store) {
        auto opened = TraceStore::open(location_, OpenMode::kReadOnly, config_);
        if (!opened) return opened.error();
        store = std::move(opened).value();
    }
    auto result = use(*store);
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(store));
    return result;
}

bool is_write_request(const json& body) {
    const auto op = body.is_object() ? body.find("op") : body.end();
    if (op == body.end() || !op->is_string()) return false;
    const auto& name = op->get_ref<const std::string&>();
    return name == "forget" || name == "prune" || name == "pin" || name == "unpin" ||
           name == "evaluate" || name == "mirror" || name == "eval_record";
}

Result<json> answer_trace_request(TraceStore& store, const json& body,
                                  const std::function<bool(const json&)>& partial,
                                  const CollectorStatsSource& collector_stats,
                                  RetentionCounters* retention, const MirrorCounters* mirror,
                                  const OtelCounters* otel) {
    if (!body.is_object()) return invalid("trace expects a JSON object with \"op\"");
    const auto op = body.find("op");
    if (op == body.end() || !op->is_string())
        return invalid("\"op\" must be one of " + std::string(kOps));
    const auto& name = op->get_ref<const std::string&>();
    if (name == "list") return list(store, body);
    if (name == "show") return show(store, body);
    if (name == "export") return export_range(store, body, partial);
    if (name == "stats") return stats(store, collector_stats, retention, mirror, otel);
    if (name == "turns") return turns(store, body, collector_stats);
    if (name == "conversations") return conversations(store, body);
    if (name == "forget") return forget(store, body);
    if (name == "prune") return prune(store, body, retention);
    if (name == "pin" || name == "unpin") return pin(store, body, name == "pin");
    if (name == "evaluate") return evaluate(store, body);
    if (name == "compare") return compare(store, body);
    if (name == "mirror") return queue_mirror_all(store, body);
    if (is_eval_op(name)) return answer_eval_request(store, body, name);
    return invalid("unknown op \"" + name + "\": one of " + std::string(kOps));
}

runtime::Handler make_trace_handler(std::shared_ptr<ReadStorePool> pool,
                                    CollectorStatsSource collector_stats,
                                    std::shared_ptr<RetentionCounters> retention,
                                    std::shared_ptr<const MirrorCounters> mirror,
                                    std::shared_ptr<const OtelCounters> otel) {
    return [pool, collector_stats, retention, mirror, otel](runtime::RequestContext& context) {
        const bool writes = is_write_request(context.body());
        const auto with = [&](const std::function<Result<json>(TraceStore&)>& use) {
            return writes ? pool->with_writer(use) : pool->with_store(use);
        };
        auto answer = with([&](TraceStore& store) {
            return answer_trace_request(
                store, context.body(),
                [&](const json& chunk) {
                    return !context.cancelled() && context.send_partial(chunk).ok();
                },
                collector_stats, retention.get(), mirror.get(), otel.get());
        });
        if (answer) {
            (void)context.reply(*answer);
        } else {
            (void)context.fail(answer.error());
        }
    };
}

}  // namespace glassbox::trace
