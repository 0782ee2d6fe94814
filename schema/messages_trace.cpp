// Codecs of the `trace` service's replies, driven by one field list per struct.
#include "schema/messages_trace.hpp"

#include <algorithm>
#include <exception>
#include <tuple>
#include <utility>

#include "schema/detail/field_codec.hpp"
#include "schema/detail/message_codecs.hpp"

namespace glassbox::schema {
namespace detail {

template <>
struct ValueCodec<StoredError> {
    static base::Result<StoredError> decode(const json& v, const std::string& path) {
        if (v.is_string()) return StoredError{v.get<std::string>()};
        ObjectReader r(v, path);
        std::string type;
        std::string message;
        r.read("type", type);
        r.read("message", message);
        if (!r.ok()) return r.error();
        if (type.empty()) return StoredError{std::move(message)};
        return StoredError{type + ": " + message};
    }
    static json encode(const StoredError& e) { return e.text; }
};

template <>
struct FieldList<TraceEvaluation> {
    using T = TraceEvaluation;
    static constexpr auto value = std::tuple{
        required("run", &T::run),
        required("set", &T::set),
        nullable("question_id", &T::question_id),
        field("answers", &T::answers),
        required("correct", &T::correct),
        nullable("hit", &T::hit),
        nullable("exact_match", &T::exact_match),
        nullable("f1", &T::f1),
        nullable("confidence", &T::confidence),
        field("evaluated", &T::evaluated),
    };
};

template <>
struct FieldList<TraceEvaluated> {
    using T = TraceEvaluated;
    static constexpr auto value = std::tuple{
        required("session", &T::session),
        required("evaluation", &T::evaluation),
        field("evaluations", &T::evaluations),
    };
};

template <>
struct FieldList<StepCost> {
    using T = StepCost;
    static constexpr auto value = std::tuple{
        required("step", &T::step),
        field("model", &T::model),
        field("input_tokens", &T::input_tokens),
        field("output_tokens", &T::output_tokens),
        nullable("cost", &T::cost),
        field("currency", &T::currency),
    };
};

template <>
struct FieldList<TraceSessionSummary> {
    using T = TraceSessionSummary;
    static constexpr auto value = std::tuple{
        required("session", &T::session),
        nullable("kind", &T::kind),
        nullable("question", &T::question),
        nullable("parent", &T::parent),
        nullable("started", &T::started),
        nullable("ended", &T::ended),
        nullable("duration_ms", &T::duration_ms),
        field("status", &T::status),
        nullable("service", &T::service),
        nullable("worker", &T::worker),
        field("events", &T::events),
        field("error", &T::error),
        field("subtraces", &T::subtraces),
        nullable("collection", &T::collection),
        field("input_tokens", &T::input_tokens),
        field("output_tokens", &T::output_tokens),
        field("pinned", &T::pinned),
        field("summary", &T::summary),
        field("evaluations", &T::evaluations),
        field("affected", &T::affected),
        nullable("cost", &T::cost),
        field("currency", &T::currency),
        field("unpriced", &T::unpriced),
    };
};

template <>
struct FieldList<TraceInvalidation> {
    using T = TraceInvalidation;
    static constexpr auto value = std::tuple{
        required("change", &T::change), field("at", &T::at),           field("kind", &T::kind),
        field("facts", &T::facts),      field("sources", &T::sources),
    };
};

template <>
struct FieldList<TraceSessionList> {
    using T = TraceSessionList;
    static constexpr auto value = std::tuple{
        required("sessions", &T::sessions),    field("total", &T::total),
        field("total_exact", &T::total_exact), field("limit", &T::limit),
        field("offset", &T::offset),           nullable("next", &T::next),
    };
};

template <>
struct FieldList<TraceEvent> {
    using T = TraceEvent;
    static constexpr auto value = std::tuple{
        field("seq", &T::seq),         field("explain_id", &T::explain_id),
        field("state", &T::state),     field("received", &T::received),
        field("triples", &T::triples), field("error", &T::error),
        field("costs", &T::costs),
    };
};

template <>
struct FieldList<TraceCollectorStats> {
    using T = TraceCollectorStats;
    static constexpr auto value = std::tuple{
        field("deliveries", &T::deliveries),
        field("stored", &T::stored),
        field("acked", &T::acked),
        field("store_failures", &T::store_failures),
        field("store_failing", &T::store_failing),
        field("pending", &T::pending),
        field("last_store_error", &T::last_store_error),
        field("iris_rewritten", &T::iris_rewritten),
        field("refused", &T::refused),
    };
};

template <>
struct FieldList<TraceRetentionStats> {
    using T = TraceRetentionStats;
    static constexpr auto value = std::tuple{
        field("retention_ms", &T::retention_ms),
        field("max_bytes", &T::max_bytes),
        field("prunes", &T::prunes),
        field("traces", &T::traces),
        field("sessions", &T::sessions),
        field("events", &T::events),
        field("bytes", &T::bytes),
        field("failures", &T::failures),
        field("last_error", &T::last_error),
    };
};

template <>
struct FieldList<TracePruneResult> {
    using T = TracePruneResult;
    static constexpr auto value = std::tuple{
        field("dry_run", &T::dry_run),
        field("traces", &T::traces),
        field("sessions", &T::sessions),
        field("events", &T::events),
        field("triples", &T::triples),
        field("texts", &T::texts),
        field("turns", &T::turns),
        field("quarantined", &T::quarantined),
        field("bytes_before", &T::bytes_before),
        field("bytes_after", &T::bytes_after),
    };
};

template <>
struct FieldList<ComparedRun> {
    using T = ComparedRun;
    static constexpr auto value = std::tuple{
        required("session", &T::session),
        nullable("kind", &T::kind),
        field("question", &T::question),
        nullable("collection", &T::collection),
        field("status", &T::status),
        nullable("started", &T::started),
        nullable("duration_ms", &T::duration_ms),
        field("input_tokens", &T::input_tokens),
        field("output_tokens", &T::output_tokens),
        field("answer", &T::answer),
        nullable("short_answer", &T::short_answer),
        nullable("confidence", &T::confidence),
        field("abstained", &T::abstained),
        field("models", &T::models),
        field("sources", &T::sources),
        field("facts", &T::facts),
        nullable("revision_of", &T::revision_of),
    };
};

template <>
struct FieldList<TraceComparison> {
    using T = TraceComparison;
    static constexpr auto value = std::tuple{
        required("a", &T::a),
        required("b", &T::b),
        field("answer_changed", &T::answer_changed),
        field("short_answer_changed", &T::short_answer_changed),
        nullable("confidence_change", &T::confidence_change),
        field("sources_added", &T::sources_added),
        field("sources_removed", &T::sources_removed),
        field("sources_kept", &T::sources_kept),
        field("facts_added", &T::facts_added),
        field("facts_removed", &T::facts_removed),
        field("facts_kept", &T::facts_kept),
        field("b_revises_a", &T::b_revises_a),
    };
};

template <>
struct FieldList<TracePinned> {
    using T = TracePinned;
    static constexpr auto value =
        std::tuple{required("session", &T::session), field("pinned", &T::pinned),
                   field("summary", &T::summary)};
};

template <>
struct FieldList<TraceMirrorStats> {
    using T = TraceMirrorStats;
    static constexpr auto value = std::tuple{
        field("configured", &T::configured), field("pending", &T::pending),
        field("mirrored", &T::mirrored),     field("failures", &T::failures),
        field("last_error", &T::last_error), field("oldest_pending_ms", &T::oldest_pending_ms),
        field("watermark", &T::watermark),
    };
};

template <>
struct FieldList<TraceSamplingWhole> {
    using T = TraceSamplingWhole;
    static constexpr auto value = std::tuple{
        field("error", &T::error),         field("escalation", &T::escalation),
        field("evaluated", &T::evaluated), field("pinned", &T::pinned),
        field("sampled", &T::sampled),
    };
};

template <>
struct FieldList<TraceSamplingStats> {
    using T = TraceSamplingStats;
    static constexpr auto value = std::tuple{
        field("fraction", &T::fraction),
        field("whole", &T::whole),
        field("summarised", &T::summarised),
        field("waiting", &T::waiting),
    };
};

template <>
struct FieldList<TraceOtelDrops> {
    using T = TraceOtelDrops;
    static constexpr auto value =
        std::tuple{field("queue_full", &T::queue_full), field("rejected", &T::rejected),
                   field("rejected_spans", &T::rejected_spans)};
};

template <>
struct FieldList<TraceOtelStats> {
    using T = TraceOtelStats;
    static constexpr auto value = std::tuple{
        field("configured", &T::configured),
        field("endpoint", &T::endpoint),
        field("protocol", &T::protocol),
        field("exported_runs", &T::exported_runs),
        field("exported_spans", &T::exported_spans),
        field("pending", &T::pending),
        field("dropped", &T::dropped),
        field("failures", &T::failures),
        field("last_error", &T::last_error),
    };
};

template <>
struct FieldList<TraceModelCost> {
    using T = TraceModelCost;
    static constexpr auto value = std::tuple{
        required("model", &T::model),
        field("input_tokens", &T::input_tokens),
        field("output_tokens", &T::output_tokens),
        nullable("cost", &T::cost),
    };
};

template <>
struct FieldList<TraceDayCost> {
    using T = TraceDayCost;
    static constexpr auto value = std::tuple{required("day", &T::day), field("cost", &T::cost)};
};

template <>
struct FieldList<TraceCosts> {
    using T = TraceCosts;
    static constexpr auto value = std::tuple{
        field("currency", &T::currency), field("total", &T::total),
        field("by_model", &T::by_model), field("by_day", &T::by_day),
        field("unpriced", &T::unpriced),
    };
};

template <>
struct FieldList<TraceStats> {
    using T = TraceStats;
    static constexpr auto value = std::tuple{
        field("sessions", &T::sessions),
        field("events", &T::events),
        field("triples", &T::triples),
        field("texts", &T::texts),
        field("quarantined", &T::quarantined),
        field("by_status", &T::by_status),
        field("db_bytes", &T::db_bytes),
        field("collector", &T::collector),
        field("retention", &T::retention),
        field("sparql_mirror", &T::sparql_mirror),
        field("costs", &T::costs),
        field("otel", &T::otel),
        field("sampling", &T::sampling),
    };
};

template <>
struct FieldList<TraceExportCounts> {
    using T = TraceExportCounts;
    static constexpr auto value =
        std::tuple{field("sessions", &T::sessions), field("triples", &T::triples)};
};

template <>
struct FieldList<ConversationTurn> {
    using T = ConversationTurn;
    static constexpr auto value = std::tuple{
        field("question", &T::question),
        field("answer", &T::answer),
        nullable("short_answer", &T::short_answer),
        required("trace", &T::trace),
        field("started", &T::started),
        field("status", &T::status),
    };
};

template <>
struct FieldList<ConversationTurns> {
    using T = ConversationTurns;
    static constexpr auto value =
        std::tuple{field("session_id", &T::session_id), required("turns", &T::turns)};
};

template <>
struct FieldList<ConversationSummary> {
    using T = ConversationSummary;
    static constexpr auto value = std::tuple{
        required("session_id", &T::session_id),
        field("turns", &T::turns),
        field("started", &T::started),
        field("last", &T::last),
    };
};

template <>
struct FieldList<ConversationList> {
    using T = ConversationList;
    static constexpr auto value = std::tuple{required("sessions", &T::sessions)};
};

template <>
struct FieldList<ConversationForgotten> {
    using T = ConversationForgotten;
    static constexpr auto value =
        std::tuple{field("session_id", &T::session_id), field("deleted", &T::deleted)};
};

}  // namespace detail

namespace {

using detail::json;

// A show reply: its session and events by field list, its sub-traces recursively, bounded.
base::Result<TraceDetail> detail_at(const json& v, const std::string& path, int depth) {
    if (depth > kMaxTraceDepth) {
        return detail::decode_error(
            path, "sub-traces nested deeper than " + std::to_string(kMaxTraceDepth));
    }
    detail::ObjectReader r(v, path);
    TraceDetail trace;
    if (r.require("session")) detail::read_value(r, "session", trace.session);
    detail::read_value(r, "events", trace.events);
    detail::read_value(r, "affected", trace.affected);
    r.read_array("subtraces", trace.subtraces, [depth](const json& sub, const std::string& at) {
        return detail_at(sub, at, depth + 1);
    });
    if (!r.ok()) return r.error();
    // The service sends seq order; sorting keeps every reader right whatever it got.
    std::stable_sort(trace.events.begin(), trace.events.end(),
                     [](const TraceEvent& a, const TraceEvent& b) { return a.seq < b.seq; });
    return trace;
}

}  // namespace

base::Error StoredError::error() const {
    const auto colon = text.find(": ");
    const auto type = colon == std::string::npos
                          ? std::nullopt
                          : base::error_type_from_string(text.substr(0, colon));
    if (!type) return base::make_error(base::ErrorType::kInternal, text);
    return base::make_error(*type, text.substr(colon + 2));
}

json encode(const TraceSessionSummary& m) { return detail::encode_fields(m); }
json encode(const TraceSessionList& m) { return detail::encode_fields(m); }
json encode(const TraceEvent& m) { return detail::encode_fields(m); }
json encode(const TraceCollectorStats& m) { return detail::encode_fields(m); }
json encode(const TraceStats& m) { return detail::encode_fields(m); }
json encode(const TraceExportCounts& m) { return detail::encode_fields(m); }

json encode(const TraceDetail& m) {
    json events = json::array();
    for (const auto& event : m.events) events.push_back(encode(event));
    json subtraces = json::array();
    for (const auto& sub : m.subtraces) subtraces.push_back(encode(sub));
    json out{{"session", encode(m.session)},
             {"events", std::move(events)},
             {"subtraces", std::move(subtraces)}};
    if (!m.affected.empty()) {
        json affected = json::array();
        for (const auto& a : m.affected) affected.push_back(detail::encode_fields(a));
        out["affected"] = std::move(affected);
    }
    return out;
}

template <>
base::Result<TraceSessionSummary> decode<TraceSessionSummary>(const json& value) {
    return detail::guarded<TraceSessionSummary>(
        [&] { return detail::decode_fields<TraceSessionSummary>(value, ""); });
}

template <>
base::Result<TraceSessionList> decode<TraceSessionList>(const json& value) {
    return detail::guarded<TraceSessionList>([&]() -> base::Result<TraceSessionList> {
        auto list = detail::decode_fields<TraceSessionList>(value, "");
        if (list.ok() && !value.contains("total"))
            list->total = static_cast<std::int64_t>(list->sessions.size());
        return list;
    });
}

template <>
base::Result<TraceEvent> decode<TraceEvent>(const json& value) {
    return detail::guarded<TraceEvent>(
        [&] { return detail::decode_fields<TraceEvent>(value, ""); });
}

template <>
base::Result<TraceDetail> decode<TraceDetail>(const json& value) {
    return detail::guarded<TraceDetail>([&] { return detail_at(value, "", 0); });
}

template <>
base::Result<TraceStats> decode<TraceStats>(const json& value) {
    return detail::guarded<TraceStats>(
        [&] { return detail::decode_fields<TraceStats>(value, ""); });
}

template <>
base::Result<TraceExportCounts> decode<TraceExportCounts>(const json& value) {
    return detail::guarded<TraceExportCounts>(
        [&] { return detail::decode_fields<TraceExportCounts>(value, ""); });
}

GLASSBOX_FIELD_LIST_CODEC(TraceRetentionStats)
GLASSBOX_FIELD_LIST_CODEC(TraceMirrorStats)
GLASSBOX_FIELD_LIST_CODEC(TraceOtelDrops)
GLASSBOX_FIELD_LIST_CODEC(TraceOtelStats)
GLASSBOX_FIELD_LIST_CODEC(TraceSamplingWhole)
GLASSBOX_FIELD_LIST_CODEC(TraceSamplingStats)
GLASSBOX_FIELD_LIST_CODEC(TracePruneResult)
GLASSBOX_FIELD_LIST_CODEC(TracePinned)
GLASSBOX_FIELD_LIST_CODEC(TraceEvaluation)
GLASSBOX_FIELD_LIST_CODEC(TraceEvaluated)
GLASSBOX_FIELD_LIST_CODEC(ConversationTurn)
GLASSBOX_FIELD_LIST_CODEC(ConversationTurns)
GLASSBOX_FIELD_LIST_CODEC(ConversationSummary)
GLASSBOX_FIELD_LIST_CODEC(ConversationList)
GLASSBOX_FIELD_LIST_CODEC(ConversationForgotten)
GLASSBOX_FIELD_LIST_CODEC(ComparedRun)
GLASSBOX_FIELD_LIST_CODEC(TraceComparison)

}  // namespace glassbox::schema
