// Parsing the model's ReAct reply, in text or JSON form.
#include "workers/agent/react_reply.hpp"

#include <algorithm>
#include <cctype>

#include "base/ascii.hpp"
#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::agent {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Models often wrap a reply in a Markdown code fence: the fence lines are dropped.
std::string without_fences(std::string_view text) {
    std::string out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto end = std::min(text.find('\n', start), text.size());
        const auto line = text.substr(start, end - start);
        if (!trim(line).starts_with("```")) {
            out.append(line);
            out.push_back('\n');
        }
        start = end + 1;
    }
    return out;
}

base::Error bad(const std::string& why) {
    return make_error(ErrorType::kInvalidRequest,
                      "the reply does not follow the agent-react form: " + why);
}

std::string string_of(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

base::Result<ToolCall> json_call(const json& entry) {
    if (!entry.is_object()) return bad("an action must be an object {\"tool\", \"args\"}");
    ToolCall call;
    call.tool = string_of(entry, "tool");
    if (call.tool.empty()) call.tool = string_of(entry, "action");
    if (call.tool.empty()) return bad("an action has no tool name");
    const auto args = entry.find("args");
    if (args != entry.end() && !args->is_null()) {
        if (!args->is_object()) return bad("the args of " + call.tool + " must be a JSON object");
        call.args = *args;
    }
    return call;
}

base::Result<ReactReply> parse_json_reply(const json& value) {
    if (!value.is_object()) return bad("a JSON reply must be an object");
    ReactReply reply;
    reply.thought = string_of(value, "thought");
    if (const auto final_answer = value.find("final_answer"); final_answer != value.end()) {
        if (!final_answer->is_string()) return bad("final_answer must be a string");
        reply.final_answer = final_answer->get<std::string>();
        reply.response = string_of(value, "response");
    }
    if (const auto actions = value.find("actions"); actions != value.end()) {
        if (!actions->is_array()) return bad("actions must be an array");
        for (const json& entry : *actions) {
            auto call = json_call(entry);
            if (!call) return std::move(call).error();
            reply.calls.push_back(std::move(*call));
        }
    } else if (value.contains("action") || value.contains("tool")) {
        json entry = value;
        if (!entry.contains("tool")) entry["tool"] = value["action"];
        auto call = json_call(entry);
        if (!call) return std::move(call).error();
        reply.calls.push_back(std::move(*call));
    }
    if (reply.calls.empty() && !reply.final_answer) return bad("no actions and no final_answer");
    if (!reply.calls.empty() && reply.final_answer) return bad("both actions and a final_answer");
    return reply;
}

// The key a line starts with ("thought", "action", "args", "final answer"), case-insensitive,
// and the rest of the line after its colon.
std::optional<std::pair<std::string, std::string_view>> line_key(std::string_view line) {
    static constexpr std::string_view kKeys[] = {"thought", "action input", "action",
                                                 "args",    "arguments",    "final answer"};
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string key = base::ascii_lower(trim(line.substr(0, colon)));
    while (!key.empty() && (key.front() == '*' || key.front() == '#')) key.erase(0, 1);
    while (!key.empty() && key.back() == '*') key.pop_back();
    std::string_view rest = trim(line.substr(colon + 1));
    while (!rest.empty() && rest.front() == '*') rest.remove_prefix(1);  // "**Thought:** …"
    for (auto k : kKeys) {
        if (key == k) return std::pair{key, trim(rest)};
    }
    return std::nullopt;
}

}  // namespace

base::Result<ReactReply> parse_react_reply(std::string_view text) {
    const std::string clean = without_fences(text);
    const auto body = trim(clean);
    if (body.empty()) return bad("the reply is empty");
    if (body.front() == '{') {
        auto value = schema::parse_untrusted_json(body);
        if (!value) return bad("JSON that does not parse (" + value.error().message + ")");
        return parse_json_reply(*value);
    }

    ReactReply reply;
    std::string* open = nullptr;  // the multi-line field the next plain line continues
    bool pending_action = false;  // an Action still waiting for its Args
    std::size_t start = 0;
    while (start < body.size()) {
        const auto end = std::min(body.find('\n', start), body.size());
        const std::string_view line = body.substr(start, end - start);
        start = end + 1;
        const auto key = line_key(line);
        if (!key) {
            if (open && !trim(line).empty()) {
                if (!open->empty()) open->push_back(open == &reply.thought ? ' ' : '\n');
                open->append(trim(line));
            }
            continue;
        }
        const auto& [name, rest] = *key;
        if (name == "thought") {
            reply.thought = std::string(rest);
            open = &reply.thought;
        } else if (name == "action") {
            if (rest.empty()) return bad("an Action line without a tool name");
            reply.calls.push_back(ToolCall{std::string(rest), json::object()});
            pending_action = true;
            open = nullptr;
        } else if (name == "final answer") {
            reply.final_answer = std::string(rest);
            open = &reply.response;
        } else {  // args, arguments, action input
            if (!pending_action) return bad("Args without an Action before them");
            auto args = schema::parse_untrusted_json(rest.empty() ? std::string_view("{}") : rest);
            if (!args || !args->is_object())
                return bad("the Args of " + reply.calls.back().tool +
                           " are not one JSON object on one line");
            reply.calls.back().args = std::move(*args);
            pending_action = false;
            open = nullptr;
        }
    }
    if (reply.calls.empty() && !reply.final_answer)
        return bad("no Action and no Final Answer line");
    if (!reply.calls.empty() && reply.final_answer) return bad("both an Action and a Final Answer");
    return reply;
}

}  // namespace glassbox::agent
