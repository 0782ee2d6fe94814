// The run both RAG chains share: Grounding, step sending, token counts and the end of the trace.
#include "workers/rag/rag_steps.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/ascii.hpp"
#include "schema/explain_builder.hpp"
#include "schema/freshness.hpp"
#include "workers/rag/answer_evidence.hpp"

namespace glassbox::rag {

namespace explain = schema::explain;

std::vector<std::string> concepts_of(const schema::LlmResponse& response, ConceptRepeats repeats) {
    std::vector<std::string> concepts;
    if (!response.json || !response.json->is_object()) return concepts;
    const auto list = response.json->find("concepts");
    if (list == response.json->end() || !list->is_array()) return concepts;
    std::unordered_set<std::string> seen;
    for (const auto& item : *list) {
        if (!item.is_string()) continue;
        std::string text = item.get<std::string>();
        const auto first = text.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) continue;
        text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
        if (repeats == ConceptRepeats::kDrop) {
            if (!seen.insert(base::ascii_lower(text)).second) continue;
        }
        concepts.push_back(std::move(text));
        if (concepts.size() == kMaxConcepts) break;
    }
    return concepts;
}

namespace {

// Code points [start, end) of UTF-8 `text`.
std::string_view code_point_span(std::string_view text, std::uint64_t start, std::uint64_t end) {
    std::size_t from = text.size();
    std::size_t to = text.size();
    std::uint64_t index = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (index == start) from = i;
        if (index == end) {
            to = i;
            break;
        }
        ++index;
    }
    return from >= to ? std::string_view() : text.substr(from, to - from);
}

}  // namespace

std::vector<schema::RagCitation> reader_citations(
    const SynthesisResult& synthesised, std::string_view id_prefix,
    const std::function<std::string(std::size_t)>& supporter,
    const std::function<schema::RagCitation(std::size_t, std::string_view)>& describe) {
    std::vector<schema::RagCitation> out;
    std::unordered_map<std::string, std::size_t> index;
    for (const auto& c : synthesised.citations) {
        for (const auto& id : c.ids) {
            const auto n = marker_number(id, id_prefix);
            if (!n || *n == 0) continue;
            auto [it, fresh] = index.emplace(id, out.size());
            if (fresh) {
                schema::RagCitation cited =
                    describe ? describe(*n - 1, code_point_span(synthesised.answer, c.start, c.end))
                             : schema::RagCitation{};
                cited.n = static_cast<std::uint32_t>(out.size() + 1);
                cited.id = id;
                cited.selection = supporter(*n - 1);
                out.push_back(std::move(cited));
            }
            out[it->second].spans.push_back(schema::AnswerSpan{c.start, c.end});
        }
    }
    return out;
}

base::Result<double> min_confidence_of(const std::optional<double>& requested,
                                       const RagConfig& config) {
    if (!requested) return config.min_confidence;
    if (!(*requested >= 0.0 && *requested <= 1.0))
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "min_confidence must be a number from 0 to 1");
    return *requested;
}

RagRun::RagRun(runtime::RequestContext& context, const RagConfig& config, std::string_view service)
    : context_(context),
      config_(config),
      trace_(context, service, config.explain),
      service_(service) {}

base::Result<void> RagRun::check_cancel() const {
    if (context_.cancelled()) return context_.cancellation_error();
    return {};
}

base::Result<void> RagRun::send_step(const std::string& uri, RagTrace::Build build) {
    if (auto sent = trace_.step(uri, std::move(build)); !sent) return sent;
    return check_cancel();
}

void RagRun::count_tokens(const schema::LlmResponse& response, StepTimer& timer) {
    in_tokens_ += response.in_token;
    out_tokens_ += response.out_token;
    timer.add(response);
}

base::Result<SynthesisResult> RagRun::synthesise_answer(
    StepTimer& timer, std::string_view template_name, std::map<std::string, std::string> variables,
    bool streaming, std::string_view id_prefix, std::size_t count) {
    const auto known = [id_prefix, count](std::string_view id) {
        const auto n = marker_number(id, id_prefix);
        return n && *n >= 1 && *n <= count;
    };
    auto synthesised = synthesise(context_, *calls_, template_name, std::move(variables), streaming,
                                  known, id_prefix);
    if (synthesised) count_tokens(synthesised->response, timer);
    streamed_ = streaming;
    return synthesised;
}

base::Result<void> RagRun::finish(const StepTimer& timer, const std::string& previous,
                                  const SynthesisResult& given, std::string_view id_prefix,
                                  const std::function<std::string(std::size_t)>& supporter,
                                  const DescribeSource& describe, std::vector<std::string> sources,
                                  const reasoner::EvidenceFeatures& features,
                                  std::optional<explain::AnswerCompleteness> completeness,
                                  std::vector<explain::AnswerConflict> conflicts) {
    auto confidence = answer_confidence(features, service_);
    confidence.conflicts = std::move(conflicts);
    lower_for_conflicts(confidence);
    const auto abstained = abstained_answer(given, confidence, min_confidence_);
    confidence.abstained = abstained.has_value();
    confidence.completeness = std::move(completeness);
    const SynthesisResult& synthesised = abstained ? *abstained : given;
    auto reader = reader_citations(synthesised, id_prefix, supporter, describe);
    // Sources past their collection's revalidation age: said after the answer, which stays first.
    std::string answer_text = synthesised.answer;
    std::string note = schema::stale_sources_note(reader, std::chrono::system_clock::now());
    if (confidence.completeness && !abstained) {
        const auto missing = completeness_note(*confidence.completeness);
        if (!missing.empty()) note = missing + (note.empty() ? "" : " ") + note;
    }
    if (const auto disputed = conflicts_note(confidence.conflicts, reader); !disputed.empty())
        note = disputed + (note.empty() ? "" : " ") + note;
    if (!note.empty()) {
        const std::string added = (answer_text.empty() ? "" : "\n\n") + note;
        if (auto sent = send_note_chunk(added); !sent) return sent;
        answer_text += added;
    }
    std::vector<explain::Citation> citations;
    for (const auto& c : synthesised.citations) {
        explain::Citation citation{c.start, c.end, {}};
        for (const auto& id : c.ids) {
            citation.supported_by.push_back(supporter(*marker_number(id, id_prefix) - 1));
        }
        citations.push_back(std::move(citation));
    }
    std::optional<explain::ShortAnswer> short_answer;
    if (synthesised.short_answer) {
        short_answer = explain::ShortAnswer{*synthesised.short_answer, {}};
        for (const auto& id : synthesised.short_answer_ids)
            short_answer->supported_by.push_back(supporter(*marker_number(id, id_prefix) - 1));
    }
    const auto synthesis_uri = trace_.run().synthesis();
    if (auto sent = trace_.complete(synthesis_uri,
                                    [&](schema::TripleSink& out) {
                                        explain::synthesis(
                                            out, trace_.run(), timer.info(previous),
                                            explain::StoredText{answer_text, std::nullopt},
                                            citations, short_answer, &confidence);
                                    });
        !sent) {
        return sent;
    }
    schema::RagResponse final;
    final.response = std::move(answer_text);
    final.in_token = in_tokens_;
    final.out_token = out_tokens_;
    final.model = synthesised.response.model;
    final.sources = std::move(sources);
    final.explain_id = synthesis_uri;
    // Absent only when the synthesis template gave no short answer (a template without the
    // answer contract): "" says the evidence did not decide.
    final.answer = synthesised.short_answer.value_or("");
    if (short_answer) final.answer_selections = short_answer->supported_by;
    final.citations = std::move(reader);
    auto body = final_reply(std::move(final), trace_.session());
    add_confidence(body, confidence);
    return context_.reply(body);
}

base::Result<void> RagRun::send_note_chunk(const std::string& text) {
    if (!streamed_) return {};
    schema::RagResponse chunk;
    chunk.message_type = schema::RagMessageType::kChunk;
    chunk.response = text;
    return context_.send_partial(schema::encode(chunk));
}

void RagRun::run_steps(const std::string& question) {
    if (auto done = steps(question); !done) trace_.fail(done.error());
}

base::Result<void> RagRun::steps(const std::string& question) {
    if (auto r = grounding(question); !r) return r;
    if (auto r = exploration(); !r) return r;
    if (auto r = focus(); !r) return r;
    return synthesis();
}

base::Result<void> RagRun::grounding(const std::string& question) {
    StepTimer timer;
    auto extracted = calls_->llm("extract-concepts", {{"question", question}});
    if (!extracted) return extracted.error();
    count_tokens(*extracted, timer);
    concepts_ = concepts_in(*extracted);
    return send_step(trace_.run().grounding(), [run = trace_.run(), info = timer.info({}),
                                                concepts = concepts_](schema::TripleSink& out) {
        explain::grounding(out, run, info, concepts);
    });
}

}  // namespace glassbox::rag
