// What every provider shares: checking a JSON answer against its template.
#include "workers/llm/provider.hpp"

#include "schema/untrusted_json.hpp"
#include "workers/llm/json_schema.hpp"

namespace glassbox::llm {

std::optional<std::string> check_json_answer(const PromptTemplate& prompt_template,
                                             std::string_view answer, nlohmann::json& parsed) {
    // Models often wrap JSON in a Markdown fence; the JSON inside is what counts.
    std::string_view body = answer;
    const auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && body.substr(first).starts_with("```")) {
        body = body.substr(first + 3);
        const auto eol = body.find('\n');
        body = eol == std::string_view::npos ? std::string_view{} : body.substr(eol + 1);
        const auto close = body.rfind("```");
        if (close != std::string_view::npos) body = body.substr(0, close);
    }
    auto read = schema::parse_untrusted_json(body);
    if (!read) {
        parsed = nullptr;
        return "the answer: " + read.error().message;
    }
    parsed = std::move(read).value();
    if (auto why = validate_json(parsed, prompt_template.schema)) {
        parsed = nullptr;
        return "the answer does not match the template's JSON Schema: " + *why;
    }
    return std::nullopt;
}

}  // namespace glassbox::llm
