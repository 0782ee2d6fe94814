// The llm relevance judge and the escalation's rephrasing: the llm service's relevance-judge
// and rephrase-query templates, and the fallbacks when they fail.
#include "workers/query/llm_reflection.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::query {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The judge reads this much of each selection and of the cited text, and at most kMaxItems
// selections: enough to tell what the evidence is about, small enough for any model's context.
constexpr std::size_t kMaxItemBytes = 240;
constexpr std::size_t kMaxItems = 8;
constexpr std::size_t kMaxCitedBytes = 1'200;
constexpr std::size_t kMaxReasonBytes = 300;

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

// At most `limit` bytes, cut at a UTF-8 character boundary, "…" marking a cut.
std::string shorten(std::string_view s, std::size_t limit) {
    if (s.size() <= limit) return std::string(s);
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
    return std::string(s.substr(0, end)) + "…";
}

// One line: a reason is shown on one line in the trace and the CLI.
std::string one_line(std::string_view s) {
    std::string out;
    for (char c : trim(s)) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    return shorten(out, kMaxReasonBytes);
}

std::optional<double> parse_number(std::string_view s) {
    s = trim(s);
    double value = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end == s.data()) return std::nullopt;
    return value;
}

base::Result<JudgeReply> checked(double score, const std::string& reason) {
    if (!std::isfinite(score) || score < 0.0 || score > 1.0)
        return make_error(ErrorType::kDecodeError,
                          "the judge's score " + std::to_string(score) + " is not between 0 and 1");
    return JudgeReply{score, one_line(reason)};
}

// The text from its first '{' to its last '}' (a fenced or introduced JSON object), when that
// parses as a JSON object with a "score".
std::optional<json> json_object_in(std::string_view text) {
    const auto open = text.find('{');
    const auto close = text.rfind('}');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
        return std::nullopt;
    auto parsed = schema::parse_untrusted_json(text.substr(open, close - open + 1));
    if (!parsed || !parsed->is_object() || !parsed->contains("score")) return std::nullopt;
    return std::move(parsed).value();
}

// "score: 0.7" or "score = 0.7": the value after the label, when the line starts with it.
std::optional<std::string_view> labelled(std::string_view line, std::string_view label) {
    line = trim(line);
    while (!line.empty() && (line.front() == '-' || line.front() == '*'))
        line = trim(line.substr(1));
    if (line.size() <= label.size()) return std::nullopt;
    for (std::size_t i = 0; i < label.size(); ++i) {
        if (base::ascii_lower(line[i]) != label[i]) return std::nullopt;
    }
    std::string_view rest = trim(line.substr(label.size()));
    if (rest.empty() || (rest.front() != ':' && rest.front() != '=')) return std::nullopt;
    return trim(rest.substr(1));
}

base::Result<schema::LlmResponse> ask_llm(runtime::RequestContext& context,
                                          const QueryConfig& config, std::string name,
                                          std::map<std::string, std::string> variables) {
    schema::LlmRequest request;
    request.template_name = std::move(name);
    request.variables = std::move(variables);
    auto called =
        context.call(config.llm_service, schema::encode(request), config.reflection_timeout);
    if (!called) return std::move(called).error();
    auto response = schema::decode<schema::LlmResponse>(called->final);
    if (!response) return std::move(response).error();
    return response;
}

std::string failure_note(const base::Error& error) {
    return std::string(base::to_string(error.type)) + ": " + error.message;
}

}  // namespace

base::Result<JudgeReply> parse_judge_reply(std::string_view text) {
    if (const auto object = json_object_in(text)) {
        const json& score = (*object)["score"];
        std::optional<double> value;
        if (score.is_number())
            value = score.get<double>();
        else if (score.is_string())
            value = parse_number(score.get<std::string>());
        if (!value)
            return make_error(ErrorType::kDecodeError, "the judge's \"score\" is not a number");
        const auto reason = object->find("reason");
        return checked(*value, reason != object->end() && reason->is_string()
                                   ? reason->get<std::string>()
                                   : "");
    }
    std::optional<double> score;
    std::string reason;
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto end = std::min(text.find('\n', start), text.size());
        const std::string_view line = text.substr(start, end - start);
        if (const auto value = labelled(line, "score"); value && !score) {
            score = parse_number(*value);
            if (!score)
                return make_error(
                    ErrorType::kDecodeError,
                    "the judge's score line \"" + shorten(trim(line), 80) + "\" holds no number");
        } else if (const auto why = labelled(line, "reason"); why && reason.empty()) {
            reason = std::string(*why);
        }
        start = end + 1;
    }
    if (!score)
        return make_error(ErrorType::kDecodeError,
                          "the judge's reply \"" + shorten(trim(text), 80) +
                              "\" holds neither a JSON {\"score\"} nor a \"score:\" line");
    return checked(*score, reason);
}

std::string evidence_summary(const Evidence& evidence) {
    std::string out;
    std::size_t n = 0;
    for (const auto& item : evidence.kept) {
        if (n == kMaxItems) break;
        if (trim(item.text).empty()) continue;
        out += "- " + shorten(one_line(item.text), kMaxItemBytes) + "\n";
        ++n;
    }
    if (!trim(evidence.cited_text).empty())
        out += "Cited: " + shorten(one_line(evidence.cited_text), kMaxCitedBytes) + "\n";
    if (out.empty()) out = "(no evidence was kept)\n";
    return out;
}

schema::explain::ReflectionInfo model_free_reflection(const Relevance& relevance,
                                                      std::string fallback) {
    schema::explain::ReflectionInfo info;
    info.method = "model-free";
    info.score = relevance.score;
    info.reason = relevance.reason;
    info.fallback = std::move(fallback);
    return info;
}

void judge_with_llm(runtime::RequestContext& context, const QueryConfig& config,
                    const std::string& question, EngineRun& run) {
    const auto started = SteadyClock::now();
    const auto answer = ask_llm(context, config, "relevance-judge",
                                {{"question", question},
                                 {"answer", string_of(run.final, "response")},
                                 {"evidence", evidence_summary(run.evidence)}});
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started);
    std::string fallback;
    std::optional<JudgeReply> judged;
    if (!answer) {
        fallback = "the llm could not judge (" + failure_note(answer.error()) + ")";
    } else if (auto parsed = parse_judge_reply(answer->text); !parsed) {
        fallback = "the llm's reply did not parse (" + parsed.error().message + ")";
    } else {
        judged = *parsed;
    }
    if (!judged) {
        base::component_logger("worker.query")
            ->info("event=reflection_fallback engine={} why=\"{}\"", run.engine, fallback);
        run.reflection = model_free_reflection(run.relevance, std::move(fallback));
        run.reflection.duration = took;
        return;
    }
    run.relevance.score = judged->score;
    run.relevance.reason =
        "llm: " + (judged->reason.empty() ? std::string("no reason given") : judged->reason);
    run.reflection.method = "llm";
    run.reflection.score = judged->score;
    run.reflection.reason = judged->reason;
    run.reflection.fallback.clear();
    run.reflection.model = answer->model;
    run.reflection.input_tokens = answer->in_token;
    run.reflection.output_tokens = answer->out_token;
    run.reflection.duration = took;
}

std::string clean_rephrasing(std::string_view reply) {
    std::size_t start = 0;
    while (start <= reply.size()) {
        const auto end = std::min(reply.find('\n', start), reply.size());
        std::string_view line = trim(reply.substr(start, end - start));
        start = end + 1;
        if (const auto labelled_line = labelled(line, "question")) line = *labelled_line;
        while (line.size() >= 2 && (line.front() == '"' || line.front() == '\'') &&
               line.back() == line.front())
            line = trim(line.substr(1, line.size() - 2));
        if (!line.empty()) return std::string(line);
    }
    return {};
}

Rephrasing rephrase_for_escalation(runtime::RequestContext& context, const QueryConfig& config,
                                   const std::string& question, const std::string& from_engine,
                                   const std::string& why) {
    Rephrasing out{question, false, {}};
    const auto answer = ask_llm(context, config, "rephrase-query",
                                {{"question", question}, {"engine", from_engine}, {"reason", why}});
    if (!answer) {
        out.fallback = "the llm could not rephrase (" + failure_note(answer.error()) + ")";
        return out;
    }
    std::string rephrased = clean_rephrasing(answer->text);
    if (rephrased.empty()) {
        out.fallback = "the llm's rephrasing was empty";
    } else if (rephrased.size() > config.max_question_bytes) {
        out.fallback = "the llm's rephrasing is longer than a question may be";
    } else {
        out.question = std::move(rephrased);
        out.rephrased = true;
    }
    return out;
}

}  // namespace glassbox::query
