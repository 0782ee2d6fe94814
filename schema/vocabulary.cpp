// The list of every gb: term, so tests can check glassbox.ttl declares each one.
#include "schema/vocabulary.hpp"

#include <array>

namespace glassbox::schema::vocab {
namespace {

constexpr std::array kTerms{
    kQuestion, kGrounding, kExploration, kFocus, kSynthesis, kAnalysis, kToolUse,
    kObservation, kConclusion, kRoutingDecision, kEscalation, kEdgeSelection,
    kChunkSelection, kCitation, kChunk, kDocument, kWorker, kModel,
    kQuery, kStatus, kConversation, kConcept, kSeedEntity, kEdgeCount, kChunkCount, kSelectedEdge,
    kRetrievedChunk, kSelectedChunk, kScore, kReasoning, kSourceChunk, kSourceDocument,
    kCharOffset, kCharLength, kDataTier, kAnswerText, kAnswerRef, kShortAnswer,
    kShortAnswerSupportedBy, kCitationProperty,
    kSpanStart, kSpanEnd, kSupportedBy, kDurationMs, kInputTokens, kOutputTokens,
    kModelName, kRoutingMethod, kRuleFired, kConfidence, kEngine, kReason, kRelevance,
    kIteration, kThought, kAction, kArguments, kObservationText, kObservationRef,
    kToolCandidate, kToolStatus, kTerminationReason,
    kVectorRank, kVectorScore, kKeywordRank, kKeywordScore, kTitleRank, kTitleScore, kLinkRank,
    kAnswerSource, kRouteScore, kFromEngine, kDerivationChain, kAggregateTier,
    kAnswerSourceProperty, kFusionScore, kResolvedQuestion, kResolvedReference, kQuestionType, kRequestId,
    kExcludes, kExcludedEdgeCount, kCollection,
    kReflection, kReflectionProperty, kReflectionMethod, kReflectionScore, kReflectionReason,
    kReflectionFallback, kRephrasedQuestion, kRephraseFallback,
    kExploredEdge, kExploredEdgeProperty, kHop,
};

}  // namespace

std::span<const std::string_view> glassbox_terms() noexcept { return kTerms; }

}  // namespace glassbox::schema::vocab
