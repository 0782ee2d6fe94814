// Document RAG: concepts → per-query vector and keyword rankings fused by reciprocal rank →
// fetch → optional MMR → streamed synthesis with citations, each step explained.
#include "workers/rag/document_rag_service.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/ascii.hpp"
#include "schema/explain_builder.hpp"
#include "schema/fact_citation.hpp"
#include "schema/services.hpp"
#include "text/rank_fusion.hpp"
#include "text/similarity.hpp"
#include "workers/rag/answer_evidence.hpp"
#include "workers/rag/rag_answer.hpp"
#include "workers/rag/rag_steps.hpp"

namespace glassbox::rag {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using text::FusedItem;
using text::mmr_select;
using text::Ranking;
using text::RankingKind;
using text::reciprocal_rank_fusion;
namespace explain = schema::explain;

// Each ranking is read this much deeper than fetch_limit, so fusion can lift a chunk that
// ranks moderately in several rankings.
constexpr std::uint32_t kDepthFactor = 3;
constexpr std::uint32_t kMinDepth = 30;
constexpr std::uint32_t kMaxDepth = 1'000;
// Fusion: a small k makes the head of each ranking count (a chunk first for one query beats
// one that is 15th for several); the whole question weighs twice a single concept.
constexpr double kDocumentRrfK = 10.0;
constexpr double kQuestionWeight = 2.0;
// Title ranking: over this many fused candidates, the chunks of documents more than half of
// whose title words the question contains, weighted like two questions.
constexpr std::size_t kTitlePool = 40;
constexpr double kTitleContainment = 0.5;
constexpr double kTitleWeight = 4.0;
// Link ranking: chunks of pool documents whose title appears in the text of the best two
// documents (the bridge of a two-step question: the film a town's page names), weighted
// like the title ranking. Titles shorter than 4 bytes are too ambiguous to link.
constexpr std::size_t kLinkSources = 2;
constexpr double kLinkWeight = 4.0;
constexpr std::size_t kMinLinkTitle = 4;

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// A title without a trailing parenthetical ("Maximum Overdrive (film)" → "Maximum Overdrive").
std::string base_title(const std::string& title) {
    std::string t = trimmed(title);
    if (!t.empty() && t.back() == ')') {
        if (const auto open = t.rfind(" ("); open != std::string::npos)
            t = trimmed(t.substr(0, open));
    }
    return t;
}

std::size_t code_point_count(std::string_view text) {
    std::size_t n = 0;
    for (char ch : text) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
    return n;
}

std::string code_points_between(std::string_view text, std::size_t from, std::size_t to) {
    std::size_t index = 0;
    std::size_t begin = text.size();
    std::size_t end = text.size();
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (index == from) begin = i;
        if (index == to) {
            end = i;
            break;
        }
        ++index;
    }
    return begin >= end ? std::string() : std::string(text.substr(begin, end - begin));
}

// The sentence of `text` that holds `claim` (trimmed, its final punctuation dropped) word for
// word, as code points [start, end) of `text`; nullopt when the claim is not there or too
// short to say (under 12 bytes).
std::optional<std::pair<std::size_t, std::size_t>> quoted_sentence(std::string_view text,
                                                                   std::string_view claim) {
    constexpr std::size_t kMinClaim = 12;
    const auto first = claim.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return std::nullopt;
    claim.remove_prefix(first);
    while (!claim.empty() &&
           std::string_view(" \t\r\n.!?;:,").find(claim.back()) != std::string_view::npos)
        claim.remove_suffix(1);
    if (claim.size() < kMinClaim) return std::nullopt;
    const auto at = text.find(claim);
    if (at == std::string_view::npos) return std::nullopt;
    // Out to the sentence's end (its final punctuation included) and back to its start.
    std::size_t end = at + claim.size();
    while (end < text.size() && std::string_view(".!?").find(text[end]) == std::string_view::npos &&
           text[end] != '\n')
        ++end;
    if (end < text.size() && text[end] != '\n') ++end;
    std::size_t start = at;
    while (start > 0) {
        const char before = text[start - 1];
        if (before == '\n') break;
        if ((before == ' ' || before == '\t') && start >= 2 &&
            std::string_view(".!?").find(text[start - 2]) != std::string_view::npos)
            break;
        --start;
    }
    return std::pair{code_point_count(text.substr(0, start)),
                     code_point_count(text.substr(0, end))};
}

class DocumentRagRun : public RagRun {
public:
    DocumentRagRun(runtime::RequestContext& context, const RagConfig& config)
        : RagRun(context, config, schema::services::kDocumentRag) {}

    void run() { run_request(query_, &resolve_document_query); }

private:
    // Every concept counts: retrieval_queries() drops the repeats among those it uses.
    std::vector<std::string> concepts_in(const schema::LlmResponse& extracted) const override {
        return concepts_of(extracted, ConceptRepeats::kKeep);
    }

    // The retrieval queries: the whole question first, then each distinct concept that names
    // something (has a capital letter or a digit: "Leland", "Maximum Overdrive", "1986").
    // Generic concept words ("film", "directed") each pull their own unrelated best matches
    // into the fusion; the whole question already carries them.
    std::vector<std::string> retrieval_queries() const {
        std::vector<std::string> queries{query_.query};
        std::unordered_set<std::string> seen{base::ascii_lower(trimmed(query_.query))};
        for (const auto& c : concepts_) {
            const bool names = std::any_of(c.begin(), c.end(), [](char ch) {
                return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
            });
            if (!names) continue;
            std::string text = c;
            std::replace(text.begin(), text.end(), '_', ' ');
            if (seen.insert(base::ascii_lower(text)).second) queries.push_back(std::move(text));
        }
        return queries;
    }

    base::Result<void> exploration() override {
        StepTimer timer;
        auto rankings = text_rankings(timer);
        if (!rankings) return rankings.error();
        auto fused = reciprocal_rank_fusion(*rankings, kDocumentRrfK);
        if (fused.empty()) {
            return make_error(
                ErrorType::kNotFound,
                "collection \"" +
                    (query_.collection.empty() ? std::string("default") : query_.collection) +
                    "\" has no retrievable chunks: load documents first");
        }
        // The pool: more than fetch_limit, so the title ranking can lift a chunk from below.
        const std::size_t pool = std::max<std::size_t>(query_.fetch_limit, kTitlePool);
        if (fused.size() > pool) fused.resize(pool);
        std::vector<std::string> ids;
        ids.reserve(fused.size());
        for (const auto& f : fused) ids.push_back(f.id);
        auto fetched = calls_->chunks_fetch(ids);
        if (!fetched) return fetched.error();
        std::unordered_map<std::string, schema::Chunk> by_id;
        for (auto& c : *fetched) by_id.emplace(c.chunk_id, std::move(c));

        rankings->push_back(title_ranking(fused, by_id));
        auto second = reciprocal_rank_fusion(*rankings, kDocumentRrfK);
        if (auto links = link_ranking(second, by_id); !links.items.empty()) {
            rankings->push_back(std::move(links));
            second = reciprocal_rank_fusion(*rankings, kDocumentRrfK);
        }
        for (auto& f : second) {
            if (retrieved_.size() >= query_.fetch_limit) break;
            auto it = by_id.find(f.id);
            if (it == by_id.end()) continue;  // outside the pool, or removed since it was ranked
            retrieved_.push_back(std::move(it->second));
            fusion_.push_back(std::move(f));
        }
        return send_step(trace_.run().exploration(),
                         [run = trace_.run(), info = timer.info(trace_.run().grounding()),
                          chunks = retrieved_chunks()](schema::TripleSink& out) {
                             explain::document_exploration(out, run, info, chunks);
                         });
    }

    // The chunk-text rankings: by vector and by keyword for each retrieval query (the question
    // itself weighing more); the step's `timer` records the embeddings call.
    base::Result<std::vector<Ranking>> text_rankings(StepTimer& timer) {
        const auto queries = retrieval_queries();
        auto embedded = calls_->embed_recorded(queries);
        if (!embedded) return embedded.error();
        if (embedded->call) timer.add(*embedded->call);
        const auto& vectors = embedded->vectors;
        const std::uint32_t depth =
            std::clamp(query_.fetch_limit * kDepthFactor, kMinDepth, kMaxDepth);
        std::vector<Ranking> rankings;
        for (std::size_t q = 0; q < queries.size(); ++q) {
            auto by_vector = calls_->chunks_vector(vectors[q], depth);
            if (!by_vector) return by_vector.error();
            auto by_keyword = calls_->chunks_keyword(queries[q], depth);
            if (!by_keyword) return by_keyword.error();
            const double weight = q == 0 ? kQuestionWeight : 1.0;
            Ranking vector_ranking{RankingKind::kVector, {}, weight};
            for (auto& m : *by_vector)
                vector_ranking.items.emplace_back(std::move(m.chunk_id), m.score);
            Ranking keyword_ranking{RankingKind::kKeyword, {}, weight};
            for (auto& m : *by_keyword)
                keyword_ranking.items.emplace_back(std::move(m.chunk_id), m.score);
            rankings.push_back(std::move(vector_ranking));
            rankings.push_back(std::move(keyword_ranking));
            if (auto r = check_cancel(); !r) return r.error();
        }
        return rankings;
    }

    // Title ranking: chunks of documents whose title the question names (most of the title's
    // words are in the question: "Leland, North Carolina") — a field match that the chunk-text
    // rankings cannot see.
    Ranking title_ranking(const std::vector<FusedItem>& fused,
                          const std::unordered_map<std::string, schema::Chunk>& by_id) const {
        const auto question_words = text::content_words(query_.query);
        std::vector<std::pair<double, std::string>> titled;
        for (const auto& f : fused) {
            const auto it = by_id.find(f.id);
            if (it == by_id.end()) continue;
            const double named = text::title_containment(it->second.document_title, question_words);
            if (named > kTitleContainment) titled.emplace_back(named, f.id);
        }
        std::stable_sort(titled.begin(), titled.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        Ranking ranking{RankingKind::kTitle, {}, kTitleWeight};
        for (auto& [named, id] : titled) ranking.items.emplace_back(std::move(id), named);
        return ranking;
    }

    // Link ranking: chunks of other documents whose title the best documents' text names.
    Ranking link_ranking(const std::vector<FusedItem>& ranked,
                         const std::unordered_map<std::string, schema::Chunk>& by_id) const {
        std::string linking_text;
        std::unordered_set<std::string> linking_docs;
        for (const auto& f : ranked) {
            if (linking_docs.size() >= kLinkSources) break;
            const auto it = by_id.find(f.id);
            if (it == by_id.end() || !linking_docs.insert(it->second.document_id).second) continue;
            linking_text += it->second.text;
            linking_text += '\n';
        }
        Ranking ranking{RankingKind::kLink, {}, kLinkWeight};
        for (const auto& f : ranked) {
            const auto it = by_id.find(f.id);
            if (it == by_id.end() || linking_docs.count(it->second.document_id)) continue;
            const auto title = base_title(it->second.document_title);
            if (title.size() >= kMinLinkTitle && linking_text.find(title) != std::string::npos) {
                ranking.items.emplace_back(f.id, 1.0);
            }
        }
        return ranking;
    }

    std::vector<explain::RetrievedChunk> retrieved_chunks() const {
        std::vector<explain::RetrievedChunk> out;
        for (std::size_t i = 0; i < retrieved_.size(); ++i) {
            const auto& c = retrieved_[i];
            const auto& f = fusion_[i];
            explain::RetrievedChunk r;
            r.source = explain::SourceRef{c.chunk_id, c.document_id, c.char_offset, c.char_length};
            r.source.loaded_at = c.loaded_at.value_or("");
            r.source.date = c.date.value_or("");
            r.source.max_age = c.max_age.value_or("");
            r.source.stale = c.stale;
            r.score = f.score;
            r.data_tier = static_cast<int>(c.tier);
            r.vector_rank = f.vector_rank;
            r.vector_score = f.vector_score;
            r.keyword_rank = f.keyword_rank;
            r.keyword_score = f.keyword_score;
            r.title_rank = f.title_rank;
            r.title_score = f.title_score;
            r.link_rank = f.link_rank;
            out.push_back(std::move(r));
        }
        return out;
    }

    // Re-ranking by maximal marginal relevance when more chunks were fetched than are kept.
    base::Result<void> focus() override {
        const bool rerank =
            query_.fetch_limit > query_.doc_limit && retrieved_.size() > query_.doc_limit;
        if (!rerank) {
            for (std::size_t i = 0; i < std::min<std::size_t>(retrieved_.size(), query_.doc_limit);
                 ++i)
                selected_.push_back(i);
            return {};
        }
        StepTimer timer;
        const double top = fusion_.front().score;
        std::vector<double> relevance;
        std::vector<text::TermCounts> bags;
        for (std::size_t i = 0; i < retrieved_.size(); ++i) {
            relevance.push_back(top > 0.0 ? fusion_[i].score / top : 0.0);
            bags.push_back(
                text::term_counts(retrieved_[i].document_title + "\n" + retrieved_[i].text));
        }
        selected_ = mmr_select(
            relevance, [&](std::size_t a, std::size_t b) { return text::cosine(bags[a], bags[b]); },
            query_.doc_limit, config_.mmr_lambda);
        reranked_ = true;
        std::vector<explain::RankedChunk> ranked;
        for (std::size_t pick = 0; pick < selected_.size(); ++pick) {
            const std::size_t i = selected_[pick];
            char reasoning[160];
            std::snprintf(reasoning, sizeof reasoning,
                          "fusion rank %zu of %zu, relevance %.3f; picked %zu by MMR (lambda %.2f)",
                          i + 1, retrieved_.size(), relevance[i], pick + 1, config_.mmr_lambda);
            ranked.push_back(explain::RankedChunk{i, relevance[i], reasoning});
        }
        return send_step(trace_.run().focus(),
                         [run = trace_.run(), info = timer.info(trace_.run().exploration()),
                          ranked = std::move(ranked)](schema::TripleSink& out) {
                             explain::document_focus(out, run, info, ranked);
                         });
    }

    base::Result<void> synthesis() override {
        StepTimer timer;
        json chunks = json::array();
        for (std::size_t k = 0; k < selected_.size(); ++k) {
            const auto& c = retrieved_[selected_[k]];
            chunks.push_back({{"id", std::string("c").append(std::to_string(k + 1))},
                              {"text", c.text},
                              {"title", c.document_title}});
        }
        auto synthesised =
            synthesise_answer(timer, "document-synthesis",
                              {{"question", query_.query}, {"chunks", schema::dump(chunks)}},
                              query_.streaming, "c", selected_.size());
        if (!synthesised) return synthesised.error();
        std::vector<std::string> sources;
        for (std::size_t i : selected_) sources.push_back(retrieved_[i].chunk_id);
        const auto previous = reranked_ ? trace_.run().focus() : trace_.run().exploration();
        const auto ev = evidence(*synthesised);
        auto features = document_features(ev);
        // A short answer too weak to state is withheld before conflicts are looked for: a
        // withheld value is not disputed.
        const bool withheld =
            withhold_weak_short_answer(*synthesised, features, "document-rag", min_confidence_);
        return finish(
            timer, previous, *synthesised, "c", [&](std::size_t k) { return chunk_selection(k); },
            [&](std::size_t k, std::string_view claim) { return cited_chunk(k, claim); },
            std::move(sources), features, std::nullopt,
            withheld ? std::vector<explain::AnswerConflict>{} : conflicts_of(ev));
    }

    // The trace's entity for chunk k given to synthesis: its Focus ranking, else its retrieval.
    std::string chunk_selection(std::size_t k) const {
        return reranked_ ? trace_.run().ranked_chunk(k)
                         : trace_.run().retrieved_chunk(selected_[k]);
    }

    // The conflicts among the chunks given to synthesis (document_conflicts), in words: the
    // stated chunk's document title as the subject, the slot's words as the predicate, each
    // value's chunk selection and document.
    std::vector<explain::AnswerConflict> conflicts_of(const DocumentEvidence& ev) const {
        std::vector<explain::AnswerConflict> out;
        for (const auto& c : document_conflicts(ev)) {
            const auto& stated = retrieved_[selected_[c.stated]];
            const auto& rival = retrieved_[selected_[c.rival]];
            out.push_back({stated.document_title,
                           c.slot,
                           c.stated_value,
                           c.rival_value,
                           chunk_selection(c.stated),
                           chunk_selection(c.rival),
                           {stated.document_id},
                           {rival.document_id}});
        }
        return out;
    }

    // What the answer's evidence features read: the chunks given to synthesis, in order, and
    // which of them the short answer and the text cite.
    DocumentEvidence evidence(const SynthesisResult& synthesised) const {
        DocumentEvidence ev;
        ev.question = query_.query;
        for (const std::size_t i : selected_)
            ev.kept.push_back({retrieved_[i].text, retrieved_[i].document_id,
                               retrieved_[i].document_title, fusion_[i].score});
        ev.short_answer = synthesised.short_answer;
        for (const auto& id : synthesised.short_answer_ids) {
            if (const auto n = marker_number(id, "c"); n && *n >= 1)
                ev.answer_chunks.push_back(*n - 1);
        }
        for (const auto& c : synthesised.citations) {
            for (const auto& id : c.ids) {
                if (const auto n = marker_number(id, "c"); n && *n >= 1)
                    ev.cited_chunks.push_back(*n - 1);
            }
        }
        return ev;
    }

    // Chunk k given to synthesis as the reader sees it: its document, title and tier, and the
    // sentence the claim quotes with its offsets in the document (the whole chunk when the
    // claim is not found in it word for word).
    schema::RagCitation cited_chunk(std::size_t k, std::string_view claim) const {
        schema::RagCitation c;
        c.kind = "chunk";
        if (k >= selected_.size()) return c;
        const auto& chunk = retrieved_[selected_[k]];
        c.document = chunk.document_id;
        c.title = chunk.document_title;
        c.chunk = chunk.chunk_id;
        c.tier = chunk.tier;
        schema::cite_chunk_freshness(c, chunk);
        const auto located = quoted_sentence(chunk.text, claim);
        if (located) {
            c.char_offset = chunk.char_offset + located->first;
            c.char_end = chunk.char_offset + located->second;
            c.text = code_points_between(chunk.text, located->first, located->second);
        } else {
            c.char_offset = chunk.char_offset;
            c.char_end = chunk.char_offset + chunk.char_length;
            c.text = chunk.text;
        }
        return c;
    }

    schema::DocumentRagQuery query_;
    std::vector<schema::Chunk> retrieved_;  // fused order, fetched
    std::vector<FusedItem> fusion_;         // parallel to retrieved_
    std::vector<std::size_t> selected_;     // indices into retrieved_, in answer order
    bool reranked_ = false;
};

}  // namespace

base::Result<schema::DocumentRagQuery> resolve_document_query(const schema::DocumentRagQuery& query,
                                                              const RagConfig& config) {
    if (auto ok = check_question(query.query, query.parent_uri, config); !ok) return ok.error();
    if (auto ok = check_session_id(query.session_id); !ok) return ok.error();
    schema::DocumentRagQuery q = query;
    auto doc = bounded_parameter("doc_limit", q.doc_limit, config.doc_limit, config.max_doc_limit);
    if (!doc) return doc.error();
    auto fetch = bounded_parameter("fetch_limit", q.fetch_limit, std::max(config.fetch_limit, *doc),
                                   config.max_doc_limit);
    if (!fetch) return fetch.error();
    if (*fetch < *doc) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"fetch_limit\" (" + std::to_string(*fetch) +
                              ") must be at least \"doc_limit\" (" + std::to_string(*doc) +
                              "): the kept chunks come from the fetched ones");
    }
    q.doc_limit = *doc;
    q.fetch_limit = *fetch;
    return q;
}

void handle_document_rag(runtime::RequestContext& context, const RagConfig& config) {
    DocumentRagRun(context, config).run();
}

runtime::Handler make_document_rag_handler(RagConfig config) {
    return [config = std::move(config)](runtime::RequestContext& context) {
        handle_document_rag(context, config);
    };
}

}  // namespace glassbox::rag
