// Sampling in the trace store (docs/traces.md, "Sampling"): a pass decides each top-level run
// ended long enough ago (kept whole, or summarised with its sub-runs: each event's blob rewritten
// with the triples a summary keeps, the long texts no event refers to any more deleted), and
// stats reports the decisions.
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/sampling.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using detail::to_ms;
using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;
using storage::sql::TransactionKind;

namespace {

// The decisions as sessions.sampling and sampling_counts spell them.
constexpr std::string_view kDecideError = "error";
constexpr std::string_view kDecideEscalation = "escalation";
constexpr std::string_view kDecideEvaluated = "evaluated";
constexpr std::string_view kDecidePinned = "pinned";
constexpr std::string_view kDecideSampled = "sampled";
constexpr std::string_view kDecideSummarised = "summarised";
constexpr std::string_view kDecideChange =
    "change";  // a knowledge change (`store` run): not sampled

// A long text whose events span more than this (its first store to its last use) is left: a
// text shared that widely (a chunk quoted by many runs) is likely still used, and proving it
// unused would read every event of the span.
constexpr std::int64_t kTextSpanMs = 86'400'000;

// The undecided top-level runs ended before ?1, after the cursor (?2, ?3), oldest end first:
// sessions_sampling_todo.
constexpr const char* kSampleTodoSql =
    "SELECT id, uri, ended FROM sessions WHERE sampling IS NULL AND parent IS NULL AND ended < ?1 "
    "AND (ended > ?2 OR (ended = ?2 AND id > ?3)) ORDER BY ended, id LIMIT ?4";

// A run and its sub-runs, recursively (UNION: a cycle of parents ends).
constexpr const char* kSampleTreeSql =
    "WITH RECURSIVE tree(id, uri) AS (SELECT id, uri FROM sessions WHERE id = ?1 "
    "UNION SELECT s.id, s.uri FROM sessions s JOIN tree ON s.parent = tree.uri) "
    "SELECT s.id, s.kind, s.status, s.pinned, s.last_event_at, "
    "(SELECT COUNT(*) FROM evaluations e WHERE e.session = s.id) "
    "FROM sessions s JOIN tree ON s.id = tree.id";

struct SampleRun {
    std::int64_t id = 0;
    std::string kind;
    std::string status;
    bool pinned = false;
    std::int64_t last_event_at = 0;
    std::int64_t evaluations = 0;
};

// One stored record, copied out of its blob, with its triple decoded (nullopt: it does not
// decode, and the summary keeps it as it is).
struct SampleRecord {
    std::optional<std::int64_t> text_id;
    std::string triple;
    std::optional<schema::Triple> decoded;
};

struct SampleEvent {
    std::int64_t session = 0;
    std::int64_t seq = 0;
    std::vector<SampleRecord> records;
};

Result<std::vector<SampleRun>> read_sample_tree(Connection& db, std::int64_t root) {
    auto q = db.prepare(kSampleTreeSql);
    if (!q) return q.error();
    q->bind(1, root);
    return q->collect([](const Row& row) {
        SampleRun run;
        run.id = row.int64(0);
        run.kind = row.optional_text(1).value_or("");
        run.status = std::string(row.text(2));
        run.pinned = row.int64(3) != 0;
        run.last_event_at = row.int64(4);
        run.evaluations = row.int64(5);
        return run;
    });
}

// The events of session row `session` with their records, decoded when `decode`.
Result<void> read_sample_events(Connection& db, TripleBlobReader& reader, std::int64_t session,
                                bool decode, std::vector<SampleEvent>& out) {
    auto q =
        db.prepare("SELECT seq, triple_count, triples FROM events WHERE session = ?1 ORDER BY seq");
    if (!q) return q.error();
    q->bind(1, session);
    return q->each([&](const Row& row) -> Result<void> {
        auto records = reader.decode(row.blob(2), row.int64(1));
        if (!records) {
            return make_error(ErrorType::kInternal,
                              "trace store: event " + std::to_string(row.int64(0)) +
                                  " of session row " + std::to_string(session) + ": " +
                                  records.error().message);
        }
        SampleEvent event{session, row.int64(0), {}};
        for (const StoredTriple& stored : *records) {
            SampleRecord record{stored.text_id, std::string(stored.triple), std::nullopt};
            if (decode) {
                auto parsed = json::parse(record.triple, nullptr, false);
                if (!parsed.is_discarded()) {
                    if (auto triple = schema::decode_triple(parsed)) record.decoded = *triple;
                }
            }
            event.records.push_back(std::move(record));
        }
        out.push_back(std::move(event));
        return {};
    });
}

// True when a query run's events type a step gb:Escalation (it escalated_run to another engine).
bool escalated_run(const std::vector<SampleEvent>& events) {
    for (const auto& event : events)
        for (const auto& record : event.records)
            if (record.triple.find(schema::vocab::kEscalation) != std::string::npos) return true;
    return false;
}

// Records `decision` for the trace's runs and counts it once.
Result<void> record_sample_decision(Connection& db, const std::vector<SampleRun>& tree,
                                    std::string_view decision) {
    auto mark = db.prepare("UPDATE sessions SET sampling = ?1 WHERE id = ?2");
    if (!mark) return mark.error();
    for (const auto& run : tree) {
        mark->bind(1, decision).bind(2, run.id);
        if (auto r = mark->run(); !r) return r;
        mark->reset();
    }
    auto count = db.prepare(
        "INSERT INTO sampling_counts(decision, runs) VALUES(?1, 1) ON CONFLICT(decision) DO "
        "UPDATE SET runs = sampling_counts.runs + 1");
    if (!count) return count.error();
    count->bind(1, decision);
    return count->run();
}

}  // namespace

namespace {

// One pass: its batches of top-level runs, each decided in the batch's write transaction.
class SamplePass {
public:
    SamplePass(Connection& db, const StoreConfig& config, const SampleRequest& request)
        : db_(db), config_(config), request_(request) {
        const std::int64_t now = to_ms(request.now);
        cutoff_ = now - request.after.count();
        running_since_ =
            now -
            std::chrono::duration_cast<std::chrono::milliseconds>(config.incomplete_after).count();
    }

    Result<SampleCounts> run(const std::function<Result<std::int64_t>()>& measure) {
        auto before = measure();
        if (!before) return before.error();
        counts_.bytes_before = *before;
        const std::int64_t limit = std::max<std::int64_t>(request_.batch_traces, 1);
        bool more = true;
        while (more) {
            auto transaction = storage::sql::Transaction::begin(db_, TransactionKind::kWrite);
            if (!transaction) return transaction.error();
            auto batch = next_batch(limit);
            if (!batch) return batch.error();
            more = static_cast<std::int64_t>(batch->size()) == limit;
            const std::int64_t summarised = counts_.summarised;
            for (const auto& [id, uri] : *batch) {
                if (auto r = decide(id, uri); !r) return r.error();
            }
            if (auto r = delete_unused_texts(); !r) return r.error();
            if (auto r = transaction->commit(); !r) return r.error();
            if (counts_.summarised > summarised &&
                db_.dialect() == storage::sql::Dialect::kSqlite) {
                if (auto r = db_.exec("PRAGMA incremental_vacuum"); !r) return r.error();
            }
        }
        auto after = measure();
        if (!after) return after.error();
        counts_.bytes_after = *after;
        return counts_;
    }

private:
    Result<std::vector<std::pair<std::int64_t, std::string>>> next_batch(std::int64_t limit) {
        auto q = db_.prepare(kSampleTodoSql);
        if (!q) return q.error();
        q->bind(1, cutoff_).bind(2, cursor_ended_).bind(3, cursor_id_).bind(4, limit);
        std::vector<std::pair<std::int64_t, std::string>> out;
        auto read = q->each([&](const Row& row) {
            out.emplace_back(row.int64(0), std::string(row.text(1)));
            cursor_id_ = row.int64(0);
            cursor_ended_ = row.int64(2);
        });
        if (!read) return read.error();
        return out;
    }

    // Decides the trace of top-level run `root`: left for a later pass while a run of it is
    // still active, else kept whole (recorded) or summarised.
    Result<void> decide(std::int64_t root, const std::string& uri) {
        auto tree = read_sample_tree(db_, root);
        if (!tree) return tree.error();
        bool store_run = false;
        for (const auto& run : *tree) {
            const bool running = run.status == "running" && run.last_event_at >= running_since_;
            if (running || run.last_event_at >= cutoff_) {
                ++counts_.skipped;
                return {};
            }
            if (run.id == root && run.kind == "store") store_run = true;
        }
        if (store_run) return record_sample_decision(db_, *tree, kDecideChange);
        auto decision = whole_because(*tree, uri);
        if (!decision) return decision.error();
        if (!decision->empty()) {
            count_whole(*decision);
            return record_sample_decision(db_, *tree, *decision);
        }
        if (auto r = summarise(*tree); !r) return r;
        ++counts_.summarised;
        counts_.sessions += static_cast<std::int64_t>(tree->size());
        if (config_.mirror_sparql) {
            if (auto r = detail::queue_mirror(db_, {root}, to_ms(request_.now)); !r) return r;
        }
        return record_sample_decision(db_, *tree, kDecideSummarised);
    }

    // Why the trace stays whole, in order of precedence; "" when it is to be summarised.
    Result<std::string_view> whole_because(const std::vector<SampleRun>& tree,
                                           const std::string& uri) {
        const auto any = [&](auto&& pred) { return std::any_of(tree.begin(), tree.end(), pred); };
        if (any([](const SampleRun& r) { return r.status == "error"; })) return kDecideError;
        for (const auto& run : tree) {
            if (run.kind != "query") continue;
            std::vector<SampleEvent> events;
            if (auto r = read_sample_events(db_, reader_, run.id, false, events); !r)
                return r.error();
            if (escalated_run(events)) return kDecideEscalation;
        }
        if (any([](const SampleRun& r) { return r.evaluations > 0; })) return kDecideEvaluated;
        if (any([](const SampleRun& r) { return r.pinned; })) return kDecidePinned;
        if (sampled_in(uri, request_.fraction)) return kDecideSampled;
        return std::string_view{};
    }

    void count_whole(std::string_view decision) {
        std::int64_t* slot = decision == kDecideError        ? &counts_.error
                             : decision == kDecideEscalation ? &counts_.escalation
                             : decision == kDecideEvaluated  ? &counts_.evaluated
                             : decision == kDecidePinned     ? &counts_.pinned
                                                             : &counts_.sampled;
        ++*slot;
    }

    // Rewrites every event of the trace with the triples a summary keeps (SummaryRule over the
    // whole trace: a citation may cite a sub-run's selection); the texts only dropped records
    // referred to become candidates for deletion.
    Result<void> summarise(const std::vector<SampleRun>& tree) {
        std::vector<SampleEvent> events;
        for (const auto& run : tree) {
            if (auto r = read_sample_events(db_, reader_, run.id, true, events); !r) return r;
        }
        SummaryRule rule;
        for (const auto& event : events)
            for (const auto& record : event.records)
                if (record.decoded) rule.note(*record.decoded);
        rule.close();
        std::set<std::int64_t> kept_texts;
        auto update = db_.prepare(
            "UPDATE events SET triple_count = ?1, triples = ?2 WHERE session = ?3 AND seq = ?4");
        if (!update) return update.error();
        for (const auto& event : events) {
            writer_.clear();
            for (const auto& record : event.records) {
                const bool keep = !record.decoded || rule.keeps(*record.decoded);
                if (keep) {
                    writer_.add(record.text_id, record.triple);
                    if (record.text_id) kept_texts.insert(*record.text_id);
                } else {
                    ++counts_.triples;
                    if (record.text_id) candidates_.insert(*record.text_id);
                }
            }
            if (writer_.count() == event.records.size()) continue;
            auto blob = writer_.finish();
            if (!blob) return blob.error();
            update->bind(1, static_cast<std::int64_t>(writer_.count()));
            if (blob->empty()) {
                update->bind_null(2);
            } else {
                update->bind_blob(2, *blob);
            }
            update->bind(3, event.session).bind(4, event.seq);
            if (auto r = update->run(); !r) return r;
            update->reset();
        }
        for (const auto id : kept_texts) candidates_.erase(id);
        return {};
    }

    Result<void> delete_unused_texts();

    Connection& db_;
    const StoreConfig& config_;
    const SampleRequest& request_;
    std::int64_t cutoff_ = 0;
    std::int64_t running_since_ = 0;
    std::int64_t cursor_ended_ = std::numeric_limits<std::int64_t>::min();
    std::int64_t cursor_id_ = std::numeric_limits<std::int64_t>::min();
    TripleBlobReader reader_;
    TripleBlobWriter writer_;
    std::set<std::int64_t> candidates_;  // texts dropped records referred to (this batch)
    SampleCounts counts_;
};

// One span of `received` times to read, and the candidate texts whose span it covers.
struct SampleTextSpan {
    std::int64_t from = 0;
    std::int64_t to = 0;
    std::set<std::int64_t> texts;
};

// The candidates' spans (created .. last_used), overlapping ones merged; a text stored before
// version 10 (created 0) or used over more than kTextSpanMs is left.
Result<std::vector<SampleTextSpan>> sample_text_spans(Connection& db,
                                                      const std::set<std::int64_t>& texts) {
    auto q = db.prepare("SELECT created, last_used FROM texts WHERE id = ?1");
    if (!q) return q.error();
    std::vector<SampleTextSpan> spans;
    for (const auto id : texts) {
        q->bind(1, id);
        auto span = q->first([](const Row& row) { return std::pair{row.int64(0), row.int64(1)}; });
        q->reset();
        if (!span) return span.error();
        if (!*span) continue;
        const auto [created, last_used] = **span;
        if (created <= 0 || last_used - created > kTextSpanMs) continue;
        spans.push_back(SampleTextSpan{created, last_used, {id}});
    }
    std::sort(spans.begin(), spans.end(),
              [](const SampleTextSpan& a, const SampleTextSpan& b) { return a.from < b.from; });
    std::vector<SampleTextSpan> merged;
    for (auto& span : spans) {
        if (!merged.empty() && span.from <= merged.back().to) {
            merged.back().to = std::max(merged.back().to, span.to);
            merged.back().texts.insert(span.texts.begin(), span.texts.end());
        } else {
            merged.push_back(std::move(span));
        }
    }
    return merged;
}

// Takes out of `span.texts` each text an event received in the span refers to.
Result<void> drop_referenced_texts(Connection& db, TripleBlobReader& reader, SampleTextSpan& span) {
    auto q = db.prepare(
        "SELECT triple_count, triples FROM events WHERE received >= ?1 AND received <= ?2 AND "
        "triple_count > 0");
    if (!q) return q.error();
    q->bind(1, span.from).bind(2, span.to);
    return q->each([&](const Row& row) -> Result<bool> {
        auto records = reader.decode(row.blob(1), row.int64(0));
        if (!records) return records.error();
        for (const StoredTriple& record : *records)
            if (record.text_id) span.texts.erase(*record.text_id);
        return !span.texts.empty();
    });
}

Result<void> SamplePass::delete_unused_texts() {
    if (candidates_.empty()) return {};
    auto spans = sample_text_spans(db_, candidates_);
    candidates_.clear();
    if (!spans) return spans.error();
    auto remove = db_.prepare("DELETE FROM texts WHERE id = ?1");
    if (!remove) return remove.error();
    for (auto& span : *spans) {
        if (auto r = drop_referenced_texts(db_, reader_, span); !r) return r;
        for (const auto id : span.texts) {
            remove->bind(1, id);
            if (auto r = remove->run(); !r) return r;
            remove->reset();
            ++counts_.texts;
        }
    }
    return {};
}

}  // namespace

Result<SampleCounts> TraceStore::sample(const SampleRequest& request) {
    return SamplePass(*db_, config_, request).run([this] { return live_bytes(); });
}

namespace detail {

Result<json> sampling_stats(Connection& db, const StoreConfig& config) {
    json whole = {{"error", 0}, {"escalation", 0}, {"evaluated", 0}, {"pinned", 0}, {"sampled", 0}};
    json out = {{"fraction", config.sample}, {"summarised", 0}, {"waiting", 0}};
    auto q = db.prepare("SELECT decision, runs FROM sampling_counts");
    if (!q) return q.error();
    auto read = q->each([&](const Row& row) {
        const std::string decision(row.text(0));
        if (decision == kDecideSummarised) {
            out["summarised"] = row.int64(1);
        } else if (whole.contains(decision)) {
            whole[decision] = row.int64(1);
        }
    });
    if (!read) return read.error();
    out["whole"] = std::move(whole);
    if (config.sample < 1.0) {
        auto waiting = db.prepare(
            "SELECT COUNT(*) FROM sessions WHERE sampling IS NULL AND parent IS NULL AND ended IS "
            "NOT NULL");
        if (!waiting) return waiting.error();
        auto n = waiting->first([](const Row& row) { return row.int64(0); });
        if (!n) return n.error();
        out["waiting"] = n->value_or(0);
    }
    return out;
}

}  // namespace detail

}  // namespace glassbox::trace
