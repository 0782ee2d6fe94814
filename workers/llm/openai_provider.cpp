// OpenAiProvider: chat completions, plain or streamed, with one schema repair for JSON answers.
#include "workers/llm/openai_provider.hpp"

#include "schema/untrusted_json.hpp"
#include "workers/llm/answer_contract.hpp"

namespace glassbox::llm {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr std::string_view kJsonSystemMessage =
    "You answer with a single JSON object and nothing else: no prose, no Markdown.";

std::uint64_t usage_count(const json& usage, const char* key) {
    if (!usage.is_object()) return 0;
    const auto it = usage.find(key);
    return it != usage.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

}  // namespace

OpenAiProvider::OpenAiProvider(OpenAiProviderOptions options)
    : options_(std::move(options)),
      client_(options_.base_url, "chat/completions", options_.api_key, options_.http) {}

base::Result<OpenAiProvider::Answer> OpenAiProvider::complete(const json& messages,
                                                              bool json_output,
                                                              const GenerateOptions& options) {
    json body{
        {"model", options_.model}, {"messages", messages}, {"temperature", options_.temperature}};
    if (json_output) body["response_format"] = {{"type", "json_object"}};
    http::CallOptions call;
    call.deadline = options.deadline;
    call.cancelled = options.cancelled;
    const auto malformed = [&](const std::string& why) { return client_.malformed(why); };

    Answer answer;
    const bool streaming = !json_output && options.on_text;
    if (!streaming) {
        auto response = client_.post_json(body, call);
        if (!response) return std::move(response).error();
        auto read = client_.read_object(response->body);
        if (!read) return std::move(read).error();
        const json& parsed = *read;
        const auto choices = parsed.find("choices");
        if (choices == parsed.end() || !choices->is_array() || choices->empty() ||
            !(*choices)[0].is_object())
            return malformed("no \"choices\"");
        const json& message = (*choices)[0].value("message", json::object());
        if (!message.is_object() || !message.contains("content") || !message["content"].is_string())
            return malformed("choices[0].message.content is not a string");
        answer.content = message["content"].get<std::string>();
        if (const auto m = parsed.find("model"); m != parsed.end() && m->is_string())
            answer.model = m->get<std::string>();
        if (const auto u = parsed.find("usage"); u != parsed.end()) {
            answer.in_tokens = usage_count(*u, "prompt_tokens");
            answer.out_tokens = usage_count(*u, "completion_tokens");
        }
        return answer;
    }

    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    std::optional<std::string> broken;
    const auto on_chunk = [&](std::string_view data) {
        auto read = schema::parse_untrusted_json(data);
        const json event = read ? std::move(read).value() : json();
        if (!event.is_object()) {
            broken = "a stream event is not a JSON object";
            return http::StreamControl::kStop;
        }
        if (const auto m = event.find("model"); m != event.end() && m->is_string())
            answer.model = m->get<std::string>();
        if (const auto u = event.find("usage"); u != event.end() && u->is_object()) {
            answer.in_tokens = usage_count(*u, "prompt_tokens");
            answer.out_tokens = usage_count(*u, "completion_tokens");
        }
        if (const auto choices = event.find("choices"); choices != event.end() &&
                                                        choices->is_array() && !choices->empty() &&
                                                        (*choices)[0].is_object()) {
            const json& delta = (*choices)[0].value("delta", json::object());
            if (delta.is_object()) {
                if (const auto c = delta.find("content"); c != delta.end() && c->is_string()) {
                    const auto piece = c->get<std::string>();
                    if (!piece.empty()) {
                        answer.content += piece;
                        options.on_text(piece);
                    }
                }
            }
        }
        return http::StreamControl::kContinue;
    };
    auto response = client_.post_stream(body, on_chunk, call);
    if (!response) return std::move(response).error();
    if (broken) return malformed(*broken);
    return answer;
}

base::Result<Completion> OpenAiProvider::generate(const PromptInput& input,
                                                  const GenerateOptions& options) {
    const bool json_output = input.prompt_template.output == OutputKind::kJson;
    json messages = json::array();
    if (json_output) messages.push_back({{"role", "system"}, {"content", kJsonSystemMessage}});
    messages.push_back({{"role", "user"}, {"content", input.rendered.text}});

    // A reply under the answer contract is checked whole before anyone sees it, so it is not
    // streamed from the endpoint; the checked reply goes to on_text as one piece.
    const bool contract = !json_output && has_contract(input.prompt_template);
    GenerateOptions whole = options;
    if (contract) whole.on_text = {};

    Completion completion;
    auto first = complete(messages, json_output, whole);
    if (!first) return std::move(first).error();
    completion.model = first->model.empty() ? options_.model : first->model;
    completion.in_tokens = first->in_tokens;
    completion.out_tokens = first->out_tokens;
    completion.text = std::move(first->content);
    if (contract) {
        ContractReply split;
        auto problem = check_reply(input.prompt_template, input.rendered, completion.text, split);
        if (problem) {
            // One repair, as for JSON: the model sees its reply and what breaks the form.
            messages.push_back({{"role", "assistant"}, {"content", completion.text}});
            messages.push_back(
                {{"role", "user"},
                 {"content", "That reply does not follow the required form: " + *problem +
                                 ". Answer again: the first line is \"Answer: \" with the short "
                                 "answer and the markers of the ids it rests on, then the "
                                 "sentences with their markers, using only the ids given."}});
            auto second = complete(messages, false, whole);
            if (!second) return std::move(second).error();
            completion.in_tokens += second->in_tokens;
            completion.out_tokens += second->out_tokens;
            if (!second->model.empty()) completion.model = second->model;
            completion.text = std::move(second->content);
            problem = check_reply(input.prompt_template, input.rendered, completion.text, split);
            if (problem) {
                return make_error(ErrorType::kUpstreamError,
                                  "the model's reply for template " + input.prompt_template.name +
                                      " still breaks the answer contract after one repair "
                                      "attempt: " +
                                      *problem);
            }
        }
        if (options.on_text && !completion.text.empty()) options.on_text(completion.text);
        return completion;
    }
    if (!json_output) return completion;

    json parsed;
    auto problem = check_json_answer(input.prompt_template, completion.text, parsed);
    if (problem) {
        // One repair: the model sees its answer and what is wrong with it.
        messages.push_back({{"role", "assistant"}, {"content", completion.text}});
        messages.push_back(
            {{"role", "user"},
             {"content", "That answer is not valid: " + *problem +
                             ". Answer again with only the corrected JSON object."}});
        auto second = complete(messages, json_output, options);
        if (!second) return std::move(second).error();
        completion.in_tokens += second->in_tokens;
        completion.out_tokens += second->out_tokens;
        if (!second->model.empty()) completion.model = second->model;
        completion.text = std::move(second->content);
        problem = check_json_answer(input.prompt_template, completion.text, parsed);
        if (problem) {
            return make_error(ErrorType::kUpstreamError,
                              "the model's answer for template " + input.prompt_template.name +
                                  " is still invalid after one repair attempt: " + *problem);
        }
    }
    // The JSON itself, without any Markdown fence the model put around it.
    completion.text = parsed.dump();
    completion.json = std::move(parsed);
    return completion;
}

}  // namespace glassbox::llm
