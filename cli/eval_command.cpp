// `glassbox eval QUESTIONS.jsonl`: asks every question of a set through the running pipeline
// and reports how the answers score against the set's accepted answers (Hits@1, exact match,
// F1), how well their confidence is calibrated (ECE, accuracy at a coverage), and one row per
// question; attaches each question's score to its run's trace as an evaluation; writes the
// rows, the summary and two charts into a folder, and records the run with its charts in the
// trace store, where the gateway and its viewer show it (docs/evaluation.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/owner_only.hpp"
#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/eval/eval_charts.hpp"
#include "cli/eval/eval_report.hpp"
#include "cli/question_request.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/settings.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "workers/trace_collector/eval_runs.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;
using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;

constexpr int kDefaultEvalTimeoutMs = 120'000;  // per question, as invoke's

struct EvalOptions {
    ClientOptions client;
    std::string questions_path;
    std::string engine = "query";
    std::size_t limit = 0;                 // 0: every question
    std::string out;                       // empty: <home>/eval/<time>-<set>
    std::optional<double> min_confidence;  // every engine: the request's floor
};

struct Question {
    std::string id;
    std::string question;
    std::vector<std::string> accepted;
    bool list = false;  // "kind": "list"
};

// One line of the set: an object with `question` (a non-empty string) and `answers` (a
// non-empty list of strings); `id` when it has one; other fields are ignored.
Result<Question> question_of(const json& line, std::size_t number) {
    Question q;
    if (!line.is_object() || !line.contains("question") || !line["question"].is_string() ||
        line["question"].get<std::string>().empty())
        return make_error(ErrorType::kInvalidRequest, "no \"question\" string");
    q.question = line["question"].get<std::string>();
    if (!line.contains("answers") || !line["answers"].is_array() || line["answers"].empty())
        return make_error(ErrorType::kInvalidRequest, "no \"answers\" list");
    for (const auto& answer : line["answers"]) {
        if (!answer.is_string())
            return make_error(ErrorType::kInvalidRequest, "an answer that is not a string");
        q.accepted.push_back(answer.get<std::string>());
    }
    const auto kind = line.find("kind");
    q.list = kind != line.end() && kind->is_string() && kind->get<std::string>() == "list";
    const auto id = line.find("id");
    q.id = id != line.end() && id->is_string()   ? id->get<std::string>()
           : id != line.end() && id->is_number() ? id->dump()
                                                 : std::to_string(number);
    return q;
}

// The whole set, checked before anything is asked: a bad line is an error naming its place.
Result<std::vector<Question>> read_questions(const fs::path& path, std::size_t limit) {
    std::ifstream in(path);
    if (!in)
        return make_error(ErrorType::kNotFound, "cannot read the question set " + path.string());
    std::vector<Question> out;
    std::string text;
    for (std::size_t number = 1; std::getline(in, text); ++number) {
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        const json line = json::parse(text, nullptr, false);
        auto q = question_of(line, number);
        if (!q) {
            return make_error(line.is_discarded() ? ErrorType::kInvalidJson : q.error().type,
                              path.string() + ":" + std::to_string(number) + ": " +
                                  (line.is_discarded() ? "not JSON" : q.error().message),
                              base::ErrorPlace{path.string(), number, 0});
        }
        out.push_back(std::move(q).value());
        if (limit != 0 && out.size() == limit) break;
    }
    if (out.empty())
        return make_error(ErrorType::kInvalidRequest, path.string() + ": no questions in the set");
    return out;
}

// The terminal reply's body, or the typed error that ended the request.
Result<json> ask(bus::BusClient& bus, const EvalOptions& options, const Question& q) {
    QuestionRequest request;
    request.service = options.engine;
    request.question = q.question;
    request.collection = settings().text("client.collection");
    request.streaming = false;
    TargetParameters targets;
    targets.graph_rag.min_confidence = options.min_confidence;
    targets.document_rag.min_confidence = options.min_confidence;
    targets.agent.min_confidence = options.min_confidence;
    targets.query_min_confidence = options.min_confidence;
    const std::string body = dump_json(question_body(request, targets));
    auto stream = bus::open_stream(bus, options.engine, body, options.client.timeout());
    if (!stream) return stream.error();
    const auto wait = options.client.timeout() + std::chrono::seconds{10};
    for (;;) {
        auto reply = stream->next(wait);
        if (!reply) return std::move(reply).error();
        if (!reply->terminal()) continue;
        if (reply->kind == bus::ReplyKind::kError) return *reply->error;
        if (auto error = body_error(reply->body)) return *error;
        return std::move(reply->body);
    }
}

eval::EvalRow row_of(const Question& q, const Result<json>& reply, double seconds) {
    eval::EvalRow row;
    row.id = q.id;
    row.question = q.question;
    row.accepted = q.accepted;
    row.list = q.list;
    row.seconds = seconds;
    if (!reply) {
        row.error = reply.error().describe();
        return row;
    }
    const json& body = *reply;
    row.answer = string_field(body, "response");
    if (body.contains("answer") && body["answer"].is_string())
        row.short_answer = body["answer"].get<std::string>();
    if (body.contains("confidence") && body["confidence"].is_number())
        row.confidence = body["confidence"].get<double>();
    row.calibrator = string_field(body, "calibrator");
    if (body.contains("evidence") && body["evidence"].is_array()) row.evidence = body["evidence"];
    row.abstained = body.contains("abstained") && body["abstained"].is_boolean() &&
                    body["abstained"].get<bool>();
    row.trace = string_field(body, "session");
    row.score = eval::score_answer(row.short_answer, row.answer, row.accepted);
    if (row.abstained)
        row.found = eval::score_answer(std::nullopt, eval::found_text(row.answer), row.accepted);
    if (row.list) row.named_share = eval::named_share(row.short_answer, row.answer, row.accepted);
    return row;
}

// ---- evaluations on traces (docs/evaluation.md, "Evaluations on traces") ----------------------

// What each question's evaluation names: this evaluation run (its report folder's name) and the
// question set.
struct EvalRun {
    std::string id;
    std::string set;
};

// A text cut to the trace service's bound (at a character boundary): a long id or answer of
// the set still gets its evaluation.
std::string bounded(std::string_view text, std::size_t max) {
    return std::string(base::utf8_prefix(text, max));
}

json evaluation_of(const EvalRun& run, const eval::EvalRow& row) {
    json answers = json::array();
    for (const auto& answer : row.accepted) {
        if (answers.size() == schema::kMaxEvaluationAnswers) break;
        answers.push_back(bounded(answer, schema::kMaxEvaluationAnswerBytes));
    }
    json e{{"run", bounded(run.id, schema::kMaxEvaluationNameBytes)},
           {"set", bounded(run.set, schema::kMaxEvaluationNameBytes)},
           {"question_id", bounded(row.id, schema::kMaxEvaluationNameBytes)},
           {"answers", std::move(answers)},
           {"correct", eval::correct(row)},
           {"hit", row.score.hit},
           {"exact_match", row.score.exact},
           {"f1", row.score.f1}};
    e["confidence"] = row.confidence ? json(*row.confidence) : json(nullptr);
    return e;
}

// Failures after which no other question's evaluation is tried: the trace service itself
// cannot be reached, and asking again would only wait as long for each.
bool service_failure(base::ErrorType type) noexcept {
    return type == ErrorType::kUnknownService || type == ErrorType::kServiceUnavailable ||
           type == ErrorType::kTimeout || type == ErrorType::kDeadlineExceeded ||
           type == ErrorType::kBrokerUnavailable;
}

// Attaches a row's score to its run's trace through the trace service's `evaluate` op. The
// service waits (settle_ms) for a trace the collector has not stored yet.
Result<void> attach_evaluation(bus::BusClient& bus, const EvalOptions& options, const EvalRun& run,
                               const eval::EvalRow& row) {
    const std::int64_t settle_ms = schema::turns_settle_ms(options.client.timeout());
    const json request{{"op", "evaluate"},
                       {"session", row.trace},
                       {"evaluation", evaluation_of(run, row)},
                       {"settle_ms", settle_ms}};
    const auto deadline =
        std::min(options.client.timeout(), std::chrono::milliseconds{settle_ms + 5'000});
    auto replies = bus.call(schema::services::kTrace, request, deadline);
    if (!replies) return std::move(replies).error();
    if (replies->empty())
        return make_error(ErrorType::kDecodeError, "the trace service said nothing");
    if (auto error = body_error(replies->back().body)) return *error;
    return {};
}

// Attaches each row's score, as it is scored, to its run's trace; counts what was attached and
// what failed (summary.json's attached, attach_failed, attach_error).
class EvaluationAttacher {
public:
    EvaluationAttacher(bus::BusClient& bus, const EvalOptions& options, EvalRun run)
        : bus_(bus), options_(options), run_(std::move(run)) {}

    void attach(eval::EvalRow& row) {
        if (row.trace.empty()) return;  // no run stored: nothing to attach to
        if (!reachable_) {
            ++failed_;
            return;
        }
        auto attached = attach_evaluation(bus_, options_, run_, row);
        if (attached) {
            row.attached = true;
            ++attached_;
            return;
        }
        ++failed_;
        if (first_error_.empty()) first_error_ = attached.error().describe();
        reachable_ = !service_failure(attached.error().type);
    }

    void report(eval::EvalSummary& summary) const {
        summary.attached = attached_;
        summary.attach_failed = failed_;
        summary.attach_error = first_error_;
    }

private:
    bus::BusClient& bus_;
    const EvalOptions& options_;
    EvalRun run_;
    bool reachable_ = true;
    std::size_t attached_ = 0;
    std::size_t failed_ = 0;
    std::string first_error_;
};

// ---- the evaluation run's record (docs/evaluation.md, "Evaluation runs") ---------------------

// When the run started and ended, and what it asked: what the record says besides its figures.
struct RunTimes {
    std::chrono::system_clock::time_point started;
    std::chrono::system_clock::time_point finished;
};

json record_request(const EvalOptions& options, const EvalRun& run, const RunTimes& times,
                    const std::vector<eval::EvalRow>& rows, const eval::EvalSummary& summary) {
    json record_rows = json::array();
    // The trace service takes trace::kMaxEvalRunRows rows; the summary counts every question.
    for (const auto& row : rows) {
        if (record_rows.size() == trace::kMaxEvalRunRows) break;
        record_rows.push_back(eval::to_record_json(row));
    }
    std::error_code ec;
    const fs::path set_path = fs::absolute(options.questions_path, ec);
    json eval_run{
        {"name", bounded(run.id, trace::kMaxEvalRunNameBytes)},
        {"set", bounded(run.set, trace::kMaxEvalRunNameBytes)},
        {"set_path",
         bounded(ec ? options.questions_path : set_path.string(), trace::kMaxEvalRunPathBytes)},
        {"engine", options.engine},
        {"collection", bounded(settings().text("client.collection"), trace::kMaxEvalRunNameBytes)},
        {"started", base::format_xsd_datetime(times.started, base::TimePrecision::kMillis)},
        {"finished", base::format_xsd_datetime(times.finished, base::TimePrecision::kMillis)},
        {"summary", eval::to_json(summary)},
        {"rows", std::move(record_rows)}};
    return json{{"op", "eval_record"},
                {"eval_run", std::move(eval_run)},
                {"reliability_svg", eval::reliability_svg(summary)},
                {"risk_coverage_svg", eval::risk_coverage_svg(summary)}};
}

// Records the run, its rows and its charts through the trace service's eval_record op, so that
// a gateway on any host can show them (the local files are written as well).
Result<void> record_run(bus::BusClient& bus, const EvalOptions& options, const json& request) {
    auto replies = bus.call(schema::services::kTrace, request, options.client.timeout());
    if (!replies) return std::move(replies).error();
    if (replies->empty())
        return make_error(ErrorType::kDecodeError, "the trace service said nothing");
    if (auto error = body_error(replies->back().body)) return *error;
    return {};
}

std::string percent(double share) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f %%", share * 100.0);
    return buffer;
}

fs::path output_folder(const EvalOptions& options) {
    if (!options.out.empty()) return options.out;
    std::string stamp =
        base::format_xsd_datetime(std::chrono::system_clock::now(), base::TimePrecision::kSeconds);
    std::erase(stamp, ':');
    std::erase(stamp, '-');
    return options.client.home_path() / "eval" /
           (stamp + "-" + fs::path(options.questions_path).stem().string());
}

// The evaluation run's name: the report folder's ("report" for --out report/, or ./report/.).
std::string run_name(const fs::path& folder) {
    std::error_code ec;
    fs::path path = fs::absolute(folder, ec).lexically_normal();
    if (ec) path = folder.lexically_normal();
    if (path.filename().empty()) path = path.parent_path();
    return path.filename().empty() ? std::string("eval") : path.filename().string();
}

Result<json> write_report(const fs::path& folder, const std::vector<eval::EvalRow>& rows,
                          const eval::EvalSummary& summary) {
    // The folder and any missing ancestor; the folder itself owner-only (questions and answers
    // are the home's data).
    std::error_code ec;
    if (folder.has_parent_path()) fs::create_directories(folder.parent_path(), ec);
    if (ec) {
        return make_error(
            ErrorType::kInternal,
            "cannot create the folder " + folder.parent_path().string() + ": " + ec.message());
    }
    if (auto made = base::ensure_owner_only_folder(folder); !made) return made.error();
    std::string lines;
    for (const auto& row : rows) lines += dump_json(eval::to_json(row)) + "\n";
    const json files{{"rows", (folder / "rows.jsonl").string()},
                     {"summary", (folder / "summary.json").string()},
                     {"reliability", (folder / "reliability.svg").string()},
                     {"risk_coverage", (folder / "risk-coverage.svg").string()}};
    for (const auto& [path, text] :
         {std::pair{folder / "rows.jsonl", lines},
          std::pair{folder / "summary.json", dump_json(eval::to_json(summary), 2) + "\n"},
          std::pair{folder / "reliability.svg", eval::reliability_svg(summary)},
          std::pair{folder / "risk-coverage.svg", eval::risk_coverage_svg(summary)}}) {
        if (auto written = base::write_owner_only_file(path, text); !written)
            return written.error();
    }
    return files;
}

void print_text(const std::vector<eval::EvalRow>& rows, const eval::EvalSummary& s,
                const json& files, const json& record) {
    using render::safe_text;
    for (const auto& row : rows) {
        const std::string verdict = !row.error.empty() ? "error"
                                    : row.abstained    ? "abstain"
                                    : row.score.hit    ? "hit"
                                                       : "miss";
        std::cout << verdict << "  " << safe_text(row.id, false) << "  "
                  << (row.confidence ? percent(*row.confidence) : std::string("-")) << "  "
                  << safe_text(row.error.empty() ? row.score.judged.substr(0, 120) : row.error,
                               false)
                  << '\n';
    }
    std::cout << "\n"
              << s.questions << " questions, " << s.errors << " errors, " << s.abstained
              << " abstained\nHits@1 " << percent(s.hits1) << ", exact match " << percent(s.exact)
              << ", F1 " << percent(s.f1) << '\n';
    if (s.list_questions > 0)
        std::cout << "list questions " << s.list_questions << ", complete " << percent(s.complete)
                  << '\n';
    if (s.ece) {
        std::cout << "calibration error (ECE) " << percent(*s.ece) << "; accuracy at coverage";
        for (const auto& p : s.at_coverage)
            std::cout << ' ' << percent(p.coverage) << ": " << percent(p.accuracy);
        std::cout << '\n';
    } else {
        std::cout << "calibration: not measured (" << s.with_confidence << " of " << s.questions
                  << " answers carried a confidence)\n";
    }
    std::cout << "evaluations attached to traces: " << s.attached;
    if (s.attach_failed > 0)
        std::cout << " (" << s.attach_failed << " failed: " << safe_text(s.attach_error, false)
                  << ")";
    std::cout << "\nreport: "
              << safe_text(fs::path(files["rows"].get<std::string>()).parent_path().string(), false)
              << '\n';
    if (record["name"].is_string()) {
        std::cout << "evaluation run recorded as "
                  << safe_text(record["name"].get<std::string>(), false)
                  << " (the viewer's Evaluations, GET /api/v1/evals)\n";
    } else {
        std::cout << "evaluation run not recorded: "
                  << safe_text(record["error"].is_string() ? record["error"].get<std::string>()
                                                           : std::string("unknown"),
                               false)
                  << '\n';
    }
}

void run_eval(const EvalOptions& options) {
    auto questions = read_questions(options.questions_path, options.limit);
    if (!questions) exit_with_error(questions.error());
    bus::BusClientConfig config = options.client.bus_config();
    config.request_options.explain = bus::ExplainDelivery::kNone;
    bus::BusClient bus(config);
    const fs::path folder = output_folder(options);
    const EvalRun run{run_name(folder), fs::path(options.questions_path).stem().string()};
    RunTimes times{std::chrono::system_clock::now(), {}};
    EvaluationAttacher attacher(bus, options, run);
    std::vector<eval::EvalRow> rows;
    for (const auto& q : *questions) {
        const auto started = std::chrono::steady_clock::now();
        const auto reply = ask(bus, options, q);
        // No broker: nothing else would be answered either.
        if (!reply && reply.error().type == ErrorType::kBrokerUnavailable)
            exit_with_error(reply.error());
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        rows.push_back(row_of(q, reply, took.count()));
        attacher.attach(rows.back());
    }
    auto summary = eval::summarise(rows);
    attacher.report(summary);
    if (options.out.empty()) {  // <home>/eval owner-only, as the home's other folders
        auto made = base::ensure_owner_only_folder(options.client.home_path() / "eval");
        if (!made) exit_with_error(made.error());
    }
    auto files = write_report(folder, rows, summary);
    if (!files) exit_with_error(files.error());
    times.finished = std::chrono::system_clock::now();
    // The record is best effort, as the evaluations are: the report is written whatever happens.
    json record{{"name", nullptr}, {"error", nullptr}};
    if (auto recorded =
            record_run(bus, options, record_request(options, run, times, rows, summary));
        recorded) {
        record["name"] = bounded(run.id, trace::kMaxEvalRunNameBytes);
    } else {
        record["error"] = recorded.error().describe();
    }
    if (options.client.json) {
        json rows_json = json::array();
        for (const auto& row : rows) rows_json.push_back(eval::to_json(row));
        std::cout << dump_json(json{{"summary", eval::to_json(summary)},
                                    {"rows", std::move(rows_json)},
                                    {"files", *files},
                                    {"record", record}})
                  << '\n';
        return;
    }
    print_text(rows, summary, *files, record);
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto [cmd, options] = add_command<EvalOptions>(
        app, "eval",
        "Ask every question of a set (JSON lines with `question` and `answers`) and score the "
        "answers: Hits@1, exact match, F1, calibration error, accuracy at 100/80/50 % coverage",
        run_eval);
    cmd->add_option("questions", options->questions_path, "The question set (.jsonl)")->required();
    cmd->add_option("--engine", options->engine,
                    "Who answers: query (routed), graph-rag, "
                    "document-rag or agent")
        ->capture_default_str()
        ->check(CLI::IsMember({"query", "graph-rag", "document-rag", "agent"}));
    add_setting_option(*cmd, "client.collection", "--collection");
    cmd->add_option("--limit", options->limit, "Ask only the first N questions (0: all)");
    cmd->add_option("--min-confidence", options->min_confidence,
                    "The answers' confidence floor, whichever engine answers (0: never abstain, "
                    "as ops/fit-calibrator asks; default: the workers')")
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--out", options->out,
                    "The report's folder (default: <home>/eval/<time>-<set name>)");
    add_client_options(*cmd, options->client, kDefaultEvalTimeoutMs);
}

}  // namespace glassbox::cli
