// An agent's observation as one short line for a reader (`invoke agent`, chat, the trace tree):
// the tools' JSON replies (workers/agent/agent_tools.cpp) read back as facts, answers and
// chunks, never cut inside a value.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/render/render_text.hpp"
#include "cli/render/trace_render.hpp"

namespace glassbox::cli::render {
namespace {

using detail::cut_at_word;
using detail::single_line;
using nlohmann::json;

std::string string_of(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// A fact lookup's reply: {"entity", "facts": [{"s", "p", "o", …}], "omitted"?}. Its rdfs:label
// facts only restate the entity's name: counted out, not listed.
std::string facts_summary(const json& reply) {
    std::vector<std::string> facts;
    for (const auto& fact : reply["facts"]) {
        if (!fact.is_object() || string_of(fact, "p") == "label") continue;
        facts.push_back(string_of(fact, "s") + " " + string_of(fact, "p") + " " +
                        string_of(fact, "o"));
    }
    std::size_t omitted = 0;
    if (const auto it = reply.find("omitted"); it != reply.end() && it->is_number_unsigned())
        omitted = it->get<std::size_t>();
    std::string out = plural(facts.size() + omitted, "fact", "facts");
    if (const std::string entity = string_of(reply, "entity"); !entity.empty())
        out += " about " + entity;
    for (std::size_t i = 0; i < facts.size(); ++i) out += (i == 0 ? ": " : "; ") + facts[i];
    return out;
}

// A RAG tool's reply: {"answer", "response", "citations"?: [{"n", "text", "title", "document"}]}.
// A cited chunk has a title (its document's); a cited fact has none.
std::string answer_summary(const json& reply) {
    std::vector<std::string> parts;
    if (const std::string answer = string_of(reply, "answer"); !answer.empty()) {
        parts.push_back("answer \"" + answer + "\"");
    } else if (const std::string response = single_line(string_of(reply, "response"));
               !response.empty()) {
        parts.push_back("\"" + cut_at_word(response, 80) + "\"");
    } else {
        parts.push_back("no answer");
    }
    std::vector<std::string> facts;
    std::vector<std::string> documents;
    std::size_t chunks = 0;
    const auto citations = reply.find("citations");
    if (citations != reply.end() && citations->is_array()) {
        for (const auto& c : *citations) {
            if (!c.is_object()) continue;
            std::string title = string_of(c, "title");
            if (title.empty()) {
                facts.push_back(single_line(string_of(c, "text")));
                continue;
            }
            ++chunks;
            if (std::find(documents.begin(), documents.end(), title) == documents.end())
                documents.push_back(std::move(title));
        }
    }
    if (!facts.empty()) {
        std::string list = plural(facts.size(), "fact", "facts");
        for (std::size_t i = 0; i < facts.size(); ++i) list += (i == 0 ? ": " : "; ") + facts[i];
        parts.push_back(std::move(list));
    }
    if (chunks > 0) {
        std::string list = plural(chunks, "chunk", "chunks") + " from ";
        for (std::size_t i = 0; i < documents.size(); ++i)
            list += (i == 0 ? "" : ", ") + documents[i];
        parts.push_back(std::move(list));
    }
    std::string out;
    for (const auto& part : parts) out += (out.empty() ? "" : "; ") + part;
    return out;
}

// Any other JSON object: its fields as "key: value", arrays and objects by their size.
std::string fields_summary(const json& reply) {
    std::string out;
    for (const auto& [key, value] : reply.items()) {
        std::string shown;
        if (value.is_string()) {
            shown = value.get<std::string>();
        } else if (value.is_array()) {
            shown = plural(value.size(), "item", "items");
        } else if (value.is_object()) {
            shown = plural(value.size(), "field", "fields");
        } else {
            shown = value.dump();
        }
        out.append(out.empty() ? "" : "; ").append(key).append(": ").append(shown);
    }
    return out;
}

}  // namespace

std::string summarize_observation(std::string_view content, bool error, std::size_t width) {
    constexpr std::string_view kErrorPrefix = "error: ";
    std::string text;
    if (content.substr(0, kErrorPrefix.size()) == kErrorPrefix) {
        text = std::string(content.substr(kErrorPrefix.size()));
    } else if (const json reply = json::parse(content, nullptr, false);
               reply.is_object() && !error) {
        if (const auto facts = reply.find("facts"); facts != reply.end() && facts->is_array()) {
            text = facts_summary(reply);
        } else if (reply.contains("answer") || reply.contains("response")) {
            text = answer_summary(reply);
        } else {
            text = fields_summary(reply);
        }
    } else {
        text = std::string(content);
    }
    return detail::escape_controls(detail::cut_at_word(detail::single_line(text), width), false);
}

}  // namespace glassbox::cli::render
