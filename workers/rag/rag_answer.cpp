// Request checks, streamed synthesis and the FINAL reply of the RAG workers.
#include "workers/rag/rag_answer.hpp"

#include <algorithm>
#include <charconv>

#include "base/utf8.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::rag {

using base::ErrorType;
using base::make_error;

base::Result<void> check_question(const std::string& question,
                                  const std::optional<std::string>& parent_uri,
                                  const RagConfig& config) {
    if (question.size() > config.max_question_bytes) {
        return make_error(ErrorType::kInvalidRequest,
                          "the question is " + std::to_string(question.size()) +
                              " bytes; at most " + std::to_string(config.max_question_bytes) +
                              " are accepted");
    }
    if (question.find_first_not_of(" \t\r\n") == std::string::npos) {
        return make_error(ErrorType::kInvalidRequest, "\"query\" must be a non-empty question");
    }
    if (!schema::has_words(question)) {
        return make_error(ErrorType::kInvalidRequest,
                          "the question has no words to search for (\"" +
                              base::printable_utf8(question.substr(0, 40)) + "\")");
    }
    if (parent_uri && parent_uri->empty()) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"parent_uri\" must not be empty when given");
    }
    return {};
}

base::Result<void> check_session_id(const std::string& session_id) {
    if (session_id.size() > schema::kMaxSessionIdBytes) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"session_id\" is " + std::to_string(session_id.size()) +
                              " bytes; at most " + std::to_string(schema::kMaxSessionIdBytes) +
                              " are accepted");
    }
    const bool control = std::any_of(session_id.begin(), session_id.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (control)
        return make_error(ErrorType::kInvalidRequest,
                          "\"session_id\" must not hold control characters");
    return {};
}

base::Result<std::uint32_t> bounded_parameter(std::string_view field, std::uint32_t value,
                                              std::uint32_t fallback, std::uint32_t max) {
    const std::uint32_t resolved = schema::or_default(value, fallback);
    if (resolved > max) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"" + std::string(field) + "\" is " + std::to_string(resolved) +
                              "; it must be from 1 to " + std::to_string(max) +
                              " (0 = the default, " + std::to_string(fallback) + ")");
    }
    return resolved;
}

std::string query_of(const nlohmann::json& body) {
    if (!body.is_object()) return {};
    const auto it = body.find("query");
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

base::Result<SynthesisResult> synthesise(runtime::RequestContext& context, ServiceCalls& calls,
                                         std::string_view template_name,
                                         std::map<std::string, std::string> variables,
                                         bool streaming,
                                         const std::function<bool(std::string_view)>& known,
                                         std::string_view id_prefix) {
    MarkerStripper stripper(known, std::string(id_prefix));
    std::optional<base::Error> send_failed;
    const auto send_piece = [&](const std::string& piece) {
        if (piece.empty() || send_failed) return;
        schema::RagResponse chunk;
        chunk.message_type = schema::RagMessageType::kChunk;
        chunk.response = piece;
        if (auto sent = context.send_partial(schema::encode(chunk)); !sent)
            send_failed = sent.error();
    };
    std::function<void(std::string_view)> on_text;
    if (streaming) on_text = [&](std::string_view piece) { send_piece(stripper.feed(piece)); };
    auto response = calls.llm(template_name, std::move(variables), on_text);
    if (!response) return std::move(response).error();
    if (send_failed) return *send_failed;
    SynthesisResult result;
    if (streaming) {
        // The FINAL text is authoritative; the streamed pieces normally add up to it.
        if (stripper.text().empty() && !response->text.empty())
            send_piece(stripper.feed(response->text));
        send_piece(stripper.finish());
        if (send_failed) return *send_failed;
        result.answer = stripper.text();
        result.citations = stripper.citations();
    } else {
        auto stripped = strip_markers(response->text, known, id_prefix);
        result.answer = std::move(stripped.text);
        result.citations = std::move(stripped.citations);
    }
    if (response->answer) {
        result.short_answer = *response->answer;
        for (const auto& id : response->answer_ids) {
            if (known(id) &&
                std::find(result.short_answer_ids.begin(), result.short_answer_ids.end(), id) ==
                    result.short_answer_ids.end())
                result.short_answer_ids.push_back(id);
        }
    }
    result.response = std::move(response).value();
    return result;
}

nlohmann::json final_reply(schema::RagResponse final, const std::string& session) {
    final.message_type = schema::RagMessageType::kChunk;
    final.end_of_stream = true;
    final.end_of_session = true;
    auto body = schema::encode(final);
    body["session"] = session;
    return body;
}

std::optional<std::size_t> marker_number(std::string_view id, std::string_view prefix) {
    if (id.size() <= prefix.size() || !id.starts_with(prefix)) return std::nullopt;
    const auto digits = id.substr(prefix.size());
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return n;
}

}  // namespace glassbox::rag
