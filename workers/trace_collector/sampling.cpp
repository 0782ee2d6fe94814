// The sampling rule, the summary's whitelist and the sampling thread (docs/traces.md,
// "Sampling").
#include "workers/trace_collector/sampling.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <optional>

#include "base/log.hpp"
#include "schema/otel_ids.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::trace {

namespace v = schema::vocab;

bool sampled_in(std::string_view session_uri, double fraction) {
    if (!(fraction < 1.0)) return true;
    const auto trace_id = schema::otel::trace_id_of(session_uri);
    if (!trace_id || trace_id->size() != 32) return true;
    if (!(fraction > 0.0)) return false;
    // R: the 56 rightmost bits (14 hex digits); T = (1 - p) * 2^56, rounded.
    std::uint64_t randomness = 0;
    const std::string_view digits = std::string_view{*trace_id}.substr(32 - 14);
    const auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), randomness, 16);
    if (ec != std::errc() || end != digits.data() + digits.size()) return true;
    constexpr double kTwo56 = 72057594037927936.0;  // 2^56
    const auto threshold = static_cast<std::uint64_t>(std::llround((1.0 - fraction) * kTwo56));
    return randomness >= threshold;
}

namespace {

// The classes of the nodes a summary keeps as steps (the run itself, the question, included).
constexpr std::array<std::string_view, 10> kSummaryStepClasses{
    v::kQuestion, v::kGrounding,   v::kExploration, v::kFocus,           v::kSynthesis,
    v::kAnalysis, v::kObservation, v::kConclusion,  v::kRoutingDecision, v::kEscalation};

// What a summary keeps of a step: its type, times, duration, tokens, model, embeddings call,
// question, answer and how the answer stands (status, confidence, short answer), and its links to
// the nodes kept whole (citations, answer sources, the model and the worker).
constexpr std::array<std::string_view, 47> kSummaryStepPredicates{
    v::kRdfType,
    v::kProvWasGeneratedBy,
    v::kProvGeneratedAtTime,
    v::kProvStartedAtTime,
    v::kProvEndedAtTime,
    v::kProvWasDerivedFrom,
    v::kProvUsed,
    v::kProvWasInformedBy,
    v::kProvWasAssociatedWith,
    v::kProvWasAttributedTo,
    v::kProvWasRevisionOf,
    v::kDurationMs,
    v::kInputTokens,
    v::kOutputTokens,
    v::kModelName,
    v::kEmbeddingModel,
    v::kEmbeddingInputs,
    v::kEmbeddingDimensions,
    v::kEmbeddingStartedAt,
    v::kEmbeddingDurationMs,
    v::kQuery,
    v::kStatus,
    v::kConversation,
    v::kRequestId,
    v::kCollection,
    v::kAnswerText,
    v::kAnswerRef,
    v::kShortAnswer,
    v::kShortAnswerSupportedBy,
    v::kCitationProperty,
    v::kEngine,
    v::kAggregateTier,
    v::kAnswerSourceProperty,
    v::kDerivationChain,
    v::kAnswerConfidence,
    v::kAbstained,
    v::kTerminationReason,
    v::kIteration,
    v::kAction,
    v::kToolStatus,
    v::kEdgeCount,
    v::kChunkCount,
    v::kRoutingMethod,
    v::kConfidence,
    v::kQuestionType,
    v::kResolvedQuestion,
    v::kDataTier,
};

// The links from a step to the nodes a summary keeps whole.
constexpr std::array<std::string_view, 6> kSummaryStepLinks{
    v::kCitationProperty, v::kAnswerSourceProperty, v::kShortAnswerSupportedBy,
    v::kAnswerRef,        v::kProvWasAttributedTo,  v::kProvWasAssociatedWith};

// The links from a node kept whole to the further nodes kept whole: what a citation cites, what
// a selection or an answer source rests on (its fact, chunk, document).
constexpr std::array<std::string_view, 7> kSummaryNodeLinks{
    v::kSupportedBy, v::kSourceChunk,  v::kSourceDocument, v::kProvWasDerivedFrom,
    v::kRdfSubject,  v::kRdfPredicate, v::kRdfObject};

template <std::size_t N>
bool summary_among(const std::array<std::string_view, N>& names, std::string_view name) {
    for (const auto n : names)
        if (n == name) return true;
    return false;
}

// A node's key: an IRI, or "_:" and a blank node's label; nullopt for a literal.
std::optional<std::string> summary_node_key(const schema::Term& term) {
    if (term.is_iri()) return term.as_iri().value;
    if (term.is_blank()) return "_:" + term.as_blank().id;
    return std::nullopt;
}

}  // namespace

void SummaryRule::note(const schema::Triple& triple) {
    const auto subject = summary_node_key(triple.s);
    if (!subject || !triple.p.is_iri()) return;
    const std::string_view predicate = triple.p.as_iri().value;
    if (predicate == v::kRdfType && triple.o.is_iri() &&
        summary_among(kSummaryStepClasses, triple.o.as_iri().value)) {
        steps_.insert(*subject);
    }
    const auto object = summary_node_key(triple.o);
    if (!object) return;
    if (summary_among(kSummaryStepLinks, predicate)) seeds_.push_back(*subject + '\n' + *object);
    if (summary_among(kSummaryNodeLinks, predicate)) links_[*subject].push_back(*object);
}

void SummaryRule::close() {
    std::vector<std::string> todo;
    for (const auto& seed : seeds_) {
        const auto cut = seed.find('\n');
        if (steps_.count(seed.substr(0, cut)) != 0) todo.push_back(seed.substr(cut + 1));
    }
    seeds_.clear();
    while (!todo.empty()) {
        std::string node = std::move(todo.back());
        todo.pop_back();
        if (steps_.count(node) != 0 || !kept_.insert(node).second) continue;
        const auto found = links_.find(node);
        if (found == links_.end()) continue;
        for (const auto& next : found->second) todo.push_back(next);
    }
}

bool SummaryRule::keeps(const schema::Triple& triple) const {
    const auto subject = summary_node_key(triple.s);
    if (!subject) return false;
    if (steps_.count(*subject) != 0)
        return triple.p.is_iri() && summary_among(kSummaryStepPredicates, triple.p.as_iri().value);
    return kept_.count(*subject) != 0;
}

SampleRequest SamplingConfig::request(WallClock::time_point now) const {
    SampleRequest request;
    request.fraction = fraction;
    request.after = after;
    request.batch_traces = batch_traces;
    request.now = now;
    return request;
}

SamplingWorker::SamplingWorker(std::unique_ptr<TraceStore> store, SamplingConfig config)
    : store_(std::move(store)), config_(config) {}

SamplingWorker::~SamplingWorker() { stop(); }

void SamplingWorker::start() {
    thread_.start(config_.interval, [this] { return run_once(); });
}

void SamplingWorker::stop() { thread_.stop(); }

base::Result<SampleCounts> SamplingWorker::sample_once(WallClock::time_point now) {
    return store_->sample(config_.request(now));
}

bool SamplingWorker::run_once() {
    static const auto log = base::component_logger("trace-sampling");
    // No exception leaves the thread: a failure is logged and the next interval retries.
    try {
        auto counts = sample_once();
        if (!counts) {
            log->warn("event=sample_failed error=\"{}\"", counts.error().describe());
        } else if (counts->summarised > 0) {
            log->info(
                "event=summarised traces={} sessions={} triples={} texts={} bytes_before={} "
                "bytes_after={}",
                counts->summarised, counts->sessions, counts->triples, counts->texts,
                counts->bytes_before, counts->bytes_after);
        }
    } catch (const std::exception& e) {
        log->error("event=sample_failed error=\"{}\"", e.what());
    }
    return false;
}

}  // namespace glassbox::trace
