// IRIs of the explainability vocabulary: PROV-O, RDF/RDFS/XSD/OWL and glassbox's own `gb:`
// terms (declared in schema/glassbox.ttl, described in docs/vocabulary.md).
#pragma once

#include <span>
#include <string_view>

namespace glassbox::schema::vocab {

// ---- namespaces ---------------------------------------------------------------------------
inline constexpr std::string_view kGbNs = "https://glassbox.dev/ns#";
inline constexpr std::string_view kProvNs = "http://www.w3.org/ns/prov#";
inline constexpr std::string_view kRdfNs = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
inline constexpr std::string_view kRdfsNs = "http://www.w3.org/2000/01/rdf-schema#";
inline constexpr std::string_view kXsdNs = "http://www.w3.org/2001/XMLSchema#";
inline constexpr std::string_view kOwlNs = "http://www.w3.org/2002/07/owl#";
inline constexpr std::string_view kSkosNs = "http://www.w3.org/2004/02/skos/core#";
inline constexpr std::string_view kDctermsNs = "http://purl.org/dc/terms/";
// TrustGraph's explainability namespace, which glassbox.ttl links to.
inline constexpr std::string_view kTrustGraphNs = "https://trustgraph.ai/ns/";

// ---- named graphs -------------------------------------------------------------------------
// Query-time explainability: every explain triple lives here.
inline constexpr std::string_view kRetrievalGraph = "urn:graph:retrieval";
// Extraction provenance in the knowledge store (which file / chunk a fact came from).
inline constexpr std::string_view kSourceGraph = "urn:graph:source";

// ---- RDF / RDFS ---------------------------------------------------------------------------
inline constexpr std::string_view kRdfType = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
inline constexpr std::string_view kRdfStatement =
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#Statement";
inline constexpr std::string_view kRdfSubject =
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#subject";
inline constexpr std::string_view kRdfPredicate =
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#predicate";
inline constexpr std::string_view kRdfObject = "http://www.w3.org/1999/02/22-rdf-syntax-ns#object";
inline constexpr std::string_view kRdfsLabel = "http://www.w3.org/2000/01/rdf-schema#label";
inline constexpr std::string_view kRdfsComment = "http://www.w3.org/2000/01/rdf-schema#comment";

// ---- PROV-O -------------------------------------------------------------------------------
inline constexpr std::string_view kProvActivity = "http://www.w3.org/ns/prov#Activity";
inline constexpr std::string_view kProvEntity = "http://www.w3.org/ns/prov#Entity";
inline constexpr std::string_view kProvAgent = "http://www.w3.org/ns/prov#Agent";
inline constexpr std::string_view kProvSoftwareAgent = "http://www.w3.org/ns/prov#SoftwareAgent";
inline constexpr std::string_view kProvWasGeneratedBy = "http://www.w3.org/ns/prov#wasGeneratedBy";
inline constexpr std::string_view kProvWasDerivedFrom = "http://www.w3.org/ns/prov#wasDerivedFrom";
inline constexpr std::string_view kProvUsed = "http://www.w3.org/ns/prov#used";
inline constexpr std::string_view kProvWasInformedBy = "http://www.w3.org/ns/prov#wasInformedBy";
inline constexpr std::string_view kProvWasAssociatedWith =
    "http://www.w3.org/ns/prov#wasAssociatedWith";
inline constexpr std::string_view kProvWasAttributedTo =
    "http://www.w3.org/ns/prov#wasAttributedTo";
inline constexpr std::string_view kProvStartedAtTime = "http://www.w3.org/ns/prov#startedAtTime";
inline constexpr std::string_view kProvEndedAtTime = "http://www.w3.org/ns/prov#endedAtTime";
inline constexpr std::string_view kProvGeneratedAtTime =
    "http://www.w3.org/ns/prov#generatedAtTime";
inline constexpr std::string_view kProvWasInvalidatedBy =
    "http://www.w3.org/ns/prov#wasInvalidatedBy";
inline constexpr std::string_view kProvInvalidatedAtTime =
    "http://www.w3.org/ns/prov#invalidatedAtTime";
inline constexpr std::string_view kProvWasRevisionOf = "http://www.w3.org/ns/prov#wasRevisionOf";

// ---- Dublin Core terms, schema.org: a source's own date ----------------------------------------
inline constexpr std::string_view kDctermsDate = "http://purl.org/dc/terms/date";
inline constexpr std::string_view kDctermsModified = "http://purl.org/dc/terms/modified";
inline constexpr std::string_view kDctermsIssued = "http://purl.org/dc/terms/issued";
inline constexpr std::string_view kSchemaDateModified = "http://schema.org/dateModified";
inline constexpr std::string_view kSchemaDateModifiedHttps = "https://schema.org/dateModified";

// ---- gb: classes --------------------------------------------------------------------------
// The run (a prov:Activity). Every other step class is a prov:Entity.
inline constexpr std::string_view kQuestion = "https://glassbox.dev/ns#Question";
inline constexpr std::string_view kGrounding = "https://glassbox.dev/ns#Grounding";
inline constexpr std::string_view kExploration = "https://glassbox.dev/ns#Exploration";
inline constexpr std::string_view kFocus = "https://glassbox.dev/ns#Focus";
inline constexpr std::string_view kSynthesis = "https://glassbox.dev/ns#Synthesis";
inline constexpr std::string_view kAnalysis = "https://glassbox.dev/ns#Analysis";
inline constexpr std::string_view kToolUse = "https://glassbox.dev/ns#ToolUse";
inline constexpr std::string_view kObservation = "https://glassbox.dev/ns#Observation";
inline constexpr std::string_view kConclusion = "https://glassbox.dev/ns#Conclusion";
inline constexpr std::string_view kRoutingDecision = "https://glassbox.dev/ns#RoutingDecision";
inline constexpr std::string_view kEscalation = "https://glassbox.dev/ns#Escalation";
inline constexpr std::string_view kAnswerSource = "https://glassbox.dev/ns#AnswerSource";
inline constexpr std::string_view kReflection = "https://glassbox.dev/ns#Reflection";
// Parts of steps and the sources they point at.
inline constexpr std::string_view kEdgeSelection = "https://glassbox.dev/ns#EdgeSelection";
inline constexpr std::string_view kExploredEdge = "https://glassbox.dev/ns#ExploredEdge";
inline constexpr std::string_view kChunkSelection = "https://glassbox.dev/ns#ChunkSelection";
inline constexpr std::string_view kCitation = "https://glassbox.dev/ns#Citation";
inline constexpr std::string_view kChunk = "https://glassbox.dev/ns#Chunk";
inline constexpr std::string_view kDocument = "https://glassbox.dev/ns#Document";
// Agents (both prov:SoftwareAgent).
inline constexpr std::string_view kWorker = "https://glassbox.dev/ns#Worker";
inline constexpr std::string_view kModel = "https://glassbox.dev/ns#Model";

// ---- gb: properties -----------------------------------------------------------------------
inline constexpr std::string_view kQuery = "https://glassbox.dev/ns#query";
inline constexpr std::string_view kStatus = "https://glassbox.dev/ns#status";
// The conversation (a request's session_id) a top-level run is a turn of.
inline constexpr std::string_view kConversation = "https://glassbox.dev/ns#conversation";
// The HTTP request (X-Request-ID) a top-level question came in with (docs/http.md).
inline constexpr std::string_view kRequestId = "https://glassbox.dev/ns#requestId";
inline constexpr std::string_view kConcept = "https://glassbox.dev/ns#concept";
inline constexpr std::string_view kSeedEntity = "https://glassbox.dev/ns#seedEntity";
inline constexpr std::string_view kEdgeCount = "https://glassbox.dev/ns#edgeCount";
inline constexpr std::string_view kChunkCount = "https://glassbox.dev/ns#chunkCount";
inline constexpr std::string_view kSelectedEdge = "https://glassbox.dev/ns#selectedEdge";
// An edge graph RAG's traversal found (Exploration), kept or not, and the hop it was found at.
inline constexpr std::string_view kExploredEdgeProperty = "https://glassbox.dev/ns#exploredEdge";
inline constexpr std::string_view kHop = "https://glassbox.dev/ns#hop";
inline constexpr std::string_view kRetrievedChunk = "https://glassbox.dev/ns#retrievedChunk";
inline constexpr std::string_view kSelectedChunk = "https://glassbox.dev/ns#selectedChunk";
inline constexpr std::string_view kScore = "https://glassbox.dev/ns#score";
inline constexpr std::string_view kReasoning = "https://glassbox.dev/ns#reasoning";
inline constexpr std::string_view kSourceChunk = "https://glassbox.dev/ns#sourceChunk";
inline constexpr std::string_view kSourceDocument = "https://glassbox.dev/ns#sourceDocument";
inline constexpr std::string_view kCharOffset = "https://glassbox.dev/ns#charOffset";
inline constexpr std::string_view kCharLength = "https://glassbox.dev/ns#charLength";
inline constexpr std::string_view kDataTier = "https://glassbox.dev/ns#dataTier";
// Freshness of a source (docs/knowledge.md §3): whether it is past its collection's revalidation
// age, and that age ("90d"). Its load time is prov:generatedAtTime, its own date dcterms:date.
inline constexpr std::string_view kStale = "https://glassbox.dev/ns#stale";
inline constexpr std::string_view kMaxAge = "https://glassbox.dev/ns#maxAge";
// How a retrieved chunk ranked in each retrieval that found it (document RAG fusion).
inline constexpr std::string_view kVectorRank = "https://glassbox.dev/ns#vectorRank";
inline constexpr std::string_view kVectorScore = "https://glassbox.dev/ns#vectorScore";
inline constexpr std::string_view kKeywordRank = "https://glassbox.dev/ns#keywordRank";
inline constexpr std::string_view kKeywordScore = "https://glassbox.dev/ns#keywordScore";
inline constexpr std::string_view kTitleRank = "https://glassbox.dev/ns#titleRank";
inline constexpr std::string_view kTitleScore = "https://glassbox.dev/ns#titleScore";
inline constexpr std::string_view kLinkRank = "https://glassbox.dev/ns#linkRank";
inline constexpr std::string_view kAnswerText = "https://glassbox.dev/ns#answerText";
inline constexpr std::string_view kAnswerRef = "https://glassbox.dev/ns#answerRef";
// The short answer alone (gb:answerText is the full text) and the selections it rests on.
inline constexpr std::string_view kShortAnswer = "https://glassbox.dev/ns#shortAnswer";
inline constexpr std::string_view kShortAnswerSupportedBy =
    "https://glassbox.dev/ns#shortAnswerSupportedBy";
inline constexpr std::string_view kCitationProperty = "https://glassbox.dev/ns#citation";
// How far to trust an answer (docs/confidence.md): the calibrated probability, the calibrator,
// and each evidence feature with its value and its effect on the score.
inline constexpr std::string_view kAnswerConfidence = "https://glassbox.dev/ns#answerConfidence";
inline constexpr std::string_view kCalibrator = "https://glassbox.dev/ns#calibrator";
inline constexpr std::string_view kEvidenceFeatureProperty =
    "https://glassbox.dev/ns#evidenceFeature";
inline constexpr std::string_view kEvidenceFeature = "https://glassbox.dev/ns#EvidenceFeature";
inline constexpr std::string_view kFeatureName = "https://glassbox.dev/ns#featureName";
inline constexpr std::string_view kFeatureValue = "https://glassbox.dev/ns#featureValue";
inline constexpr std::string_view kFeatureEffect = "https://glassbox.dev/ns#featureEffect";
inline constexpr std::string_view kAbstained = "https://glassbox.dev/ns#abstained";
// What of the question an answer covers (a gb:Completeness node).
inline constexpr std::string_view kCompletenessProperty = "https://glassbox.dev/ns#completeness";
inline constexpr std::string_view kCompleteness = "https://glassbox.dev/ns#Completeness";
inline constexpr std::string_view kAskedPart = "https://glassbox.dev/ns#askedPart";
inline constexpr std::string_view kCoveredPart = "https://glassbox.dev/ns#coveredPart";
inline constexpr std::string_view kListQuestion = "https://glassbox.dev/ns#listQuestion";
inline constexpr std::string_view kAnswersFound = "https://glassbox.dev/ns#answersFound";
inline constexpr std::string_view kAnswersNamed = "https://glassbox.dev/ns#answersNamed";
// Sources that disagree on a single-valued fact (a gb:Conflict node).
inline constexpr std::string_view kConflictProperty = "https://glassbox.dev/ns#conflict";
inline constexpr std::string_view kConflict = "https://glassbox.dev/ns#Conflict";
inline constexpr std::string_view kStatedValue = "https://glassbox.dev/ns#statedValue";
inline constexpr std::string_view kRivalValue = "https://glassbox.dev/ns#rivalValue";
inline constexpr std::string_view kStatedSelection = "https://glassbox.dev/ns#statedSelection";
inline constexpr std::string_view kRivalSelection = "https://glassbox.dev/ns#rivalSelection";
inline constexpr std::string_view kStatedSource = "https://glassbox.dev/ns#statedSource";
inline constexpr std::string_view kRivalSource = "https://glassbox.dev/ns#rivalSource";
inline constexpr std::string_view kSpanStart = "https://glassbox.dev/ns#spanStart";
inline constexpr std::string_view kSpanEnd = "https://glassbox.dev/ns#spanEnd";
inline constexpr std::string_view kSupportedBy = "https://glassbox.dev/ns#supportedBy";
inline constexpr std::string_view kDurationMs = "https://glassbox.dev/ns#durationMs";
inline constexpr std::string_view kInputTokens = "https://glassbox.dev/ns#inputTokens";
inline constexpr std::string_view kOutputTokens = "https://glassbox.dev/ns#outputTokens";
inline constexpr std::string_view kModelName = "https://glassbox.dev/ns#model";
// The embeddings call a step made (a RAG Exploration's): the model the embeddings service
// answered with, how many texts, the vectors' dimension, when it started and how long it took.
inline constexpr std::string_view kEmbeddingModel = "https://glassbox.dev/ns#embeddingModel";
inline constexpr std::string_view kEmbeddingInputs = "https://glassbox.dev/ns#embeddingInputs";
inline constexpr std::string_view kEmbeddingDimensions =
    "https://glassbox.dev/ns#embeddingDimensions";
inline constexpr std::string_view kEmbeddingStartedAt =
    "https://glassbox.dev/ns#embeddingStartedAt";
inline constexpr std::string_view kEmbeddingDurationMs =
    "https://glassbox.dev/ns#embeddingDurationMs";
inline constexpr std::string_view kRoutingMethod = "https://glassbox.dev/ns#routingMethod";
inline constexpr std::string_view kRuleFired = "https://glassbox.dev/ns#ruleFired";
inline constexpr std::string_view kConfidence = "https://glassbox.dev/ns#confidence";
inline constexpr std::string_view kEngine = "https://glassbox.dev/ns#engine";
inline constexpr std::string_view kReason = "https://glassbox.dev/ns#reason";
inline constexpr std::string_view kRelevance = "https://glassbox.dev/ns#relevance";
// Query routing and epistemic provenance (docs/query.md).
inline constexpr std::string_view kRouteScore = "https://glassbox.dev/ns#routeScore";
inline constexpr std::string_view kFromEngine = "https://glassbox.dev/ns#fromEngine";
inline constexpr std::string_view kDerivationChain = "https://glassbox.dev/ns#derivationChain";
inline constexpr std::string_view kAggregateTier = "https://glassbox.dev/ns#aggregateTier";
inline constexpr std::string_view kAnswerSourceProperty = "https://glassbox.dev/ns#answerSource";
inline constexpr std::string_view kFusionScore = "https://glassbox.dev/ns#fusionScore";
// A follow-up question's reference to an earlier turn, resolved before routing (docs/query.md §2).
inline constexpr std::string_view kResolvedQuestion = "https://glassbox.dev/ns#resolvedQuestion";
inline constexpr std::string_view kResolvedReference = "https://glassbox.dev/ns#resolvedReference";
inline constexpr std::string_view kExcludes = "https://glassbox.dev/ns#excludes";
inline constexpr std::string_view kExcludedEdgeCount = "https://glassbox.dev/ns#excludedEdgeCount";
inline constexpr std::string_view kCollection = "https://glassbox.dev/ns#collection";
inline constexpr std::string_view kQuestionType = "https://glassbox.dev/ns#questionType";
// The relevance reflection of an engine's answer (docs/query.md §3), and an escalation's
// rephrasing.
inline constexpr std::string_view kReflectionProperty = "https://glassbox.dev/ns#reflection";
inline constexpr std::string_view kReflectionMethod = "https://glassbox.dev/ns#reflectionMethod";
inline constexpr std::string_view kReflectionScore = "https://glassbox.dev/ns#reflectionScore";
inline constexpr std::string_view kReflectionReason = "https://glassbox.dev/ns#reflectionReason";
inline constexpr std::string_view kReflectionFallback =
    "https://glassbox.dev/ns#reflectionFallback";
inline constexpr std::string_view kRephrasedQuestion = "https://glassbox.dev/ns#rephrasedQuestion";
inline constexpr std::string_view kRephraseFallback = "https://glassbox.dev/ns#rephraseFallback";
inline constexpr std::string_view kIteration = "https://glassbox.dev/ns#iteration";
inline constexpr std::string_view kThought = "https://glassbox.dev/ns#thought";
inline constexpr std::string_view kAction = "https://glassbox.dev/ns#action";
inline constexpr std::string_view kArguments = "https://glassbox.dev/ns#arguments";
inline constexpr std::string_view kObservationText = "https://glassbox.dev/ns#observation";
inline constexpr std::string_view kObservationRef = "https://glassbox.dev/ns#observationRef";
inline constexpr std::string_view kToolCandidate = "https://glassbox.dev/ns#toolCandidate";
inline constexpr std::string_view kToolStatus = "https://glassbox.dev/ns#toolStatus";
inline constexpr std::string_view kTerminationReason = "https://glassbox.dev/ns#terminationReason";
// A change to the knowledge (docs/knowledge.md): a replacing load or a retraction, recorded as a
// run of the store service whose Question is the change activity.
inline constexpr std::string_view kKnowledgeChange = "https://glassbox.dev/ns#KnowledgeChange";
inline constexpr std::string_view kChangeKind = "https://glassbox.dev/ns#changeKind";
inline constexpr std::string_view kFactsAdded = "https://glassbox.dev/ns#factsAdded";
inline constexpr std::string_view kFactsRemoved = "https://glassbox.dev/ns#factsRemoved";
inline constexpr std::string_view kRemovedFact = "https://glassbox.dev/ns#removedFact";
inline constexpr std::string_view kRemovedListed = "https://glassbox.dev/ns#removedListed";
inline constexpr std::string_view kRemovedSource = "https://glassbox.dev/ns#removedSource";
inline constexpr std::string_view kFactGraph = "https://glassbox.dev/ns#factGraph";
// A redaction the worker applied to a step's text before sending it (docs/security.md,
// "Redaction"): which rule, in which scope, how many matches; never the original.
inline constexpr std::string_view kRedaction = "https://glassbox.dev/ns#Redaction";
inline constexpr std::string_view kRedactionProperty = "https://glassbox.dev/ns#redaction";
inline constexpr std::string_view kRedactionRule = "https://glassbox.dev/ns#redactionRule";
inline constexpr std::string_view kRedactionScope = "https://glassbox.dev/ns#redactionScope";
inline constexpr std::string_view kRedactionCount = "https://glassbox.dev/ns#redactionCount";

// Every gb: class and property above, for tests that check the ontology declares them.
std::span<const std::string_view> glassbox_terms() noexcept;

}  // namespace glassbox::schema::vocab
