// POST /api/v1/load/rdf and /api/v1/load/docs: an uploaded file loaded the way `glassbox load`
// loads one (ingest/load.hpp): the same checks, and a bad file loads nothing.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "gateway/gateway_state.hpp"
#include "ingest/load.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxNameBytes = 200;
constexpr std::string_view kDocsParameters[] = {"name", "collection", "tier", "no_index"};
constexpr std::string_view kRdfParameters[] = {"name",  "collection", "tier",   "no_index",
                                               "graph", "format",     "lenient"};

// The upload's file name: `name` as given (its extension tells the format), else `fallback`.
// A name is one path component of printable ASCII, so it cannot leave the upload's folder.
base::Result<std::string> upload_name(const httplib::Request& req, const std::string& fallback) {
    if (!req.has_param("name")) return fallback;
    const std::string name = req.get_param_value("name");
    bool plain = !name.empty() && name.size() <= kMaxNameBytes && name != "." && name != "..";
    for (const char c : name)
        if (c < 0x21 || c > 0x7e || c == '/' || c == '\\') plain = false;
    if (!plain)
        return make_error(ErrorType::kInvalidRequest,
                          "name must be a file name (1 to 200 printable ASCII characters, "
                          "no slashes), e.g. facts.ttl");
    return name;
}

// The IRI an upload is known by in the store (its documents, its facts' source, the base of its
// relative IRIs): its name, not where the gateway staged it. The same name uploaded again into a
// collection is the same document, as a file loaded again by `glassbox load` is.
std::string upload_iri(const std::string& name) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string iri = "urn:glassbox:upload/";
    for (const char c : name) {
        const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') ||
                           std::string_view("-._~!$&'()*+,;=:@").find(c) != std::string_view::npos;
        if (plain) {
            iri += c;
        } else {
            iri += '%';
            iri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
            iri += kHex[static_cast<unsigned char>(c) & 0xf];
        }
    }
    return iri;
}

base::Result<std::string> text_param(const httplib::Request& req, const char* key,
                                     std::size_t max) {
    if (!req.has_param(key)) return std::string();
    std::string value = req.get_param_value(key);
    if (value.size() > max || base::find_invalid_utf8(value))
        return make_error(
            ErrorType::kInvalidRequest,
            std::string(key) + " must be UTF-8 of at most " + std::to_string(max) + " bytes");
    return value;
}

// The load's settings from the query string (its names checked by admit): collection, tier,
// no_index; rdf also graph, format, lenient. Checked as a load checks them before any file is
// read (ingest::check_settings), so a bad collection or graph is refused whatever the body.
base::Result<ingest::LoadSettings> settings_of(const Gateway::State& state,
                                               const httplib::Request& req, bool rdf) {
    ingest::LoadSettings settings;
    settings.timeout = state.config.call_timeout;
    auto collection = text_param(req, "collection", 256);
    if (!collection) return collection.error();
    settings.collection = *collection;
    if (req.has_param("tier")) {
        const std::string tier = req.get_param_value("tier");
        if (tier.size() != 1 || tier[0] < '1' || tier[0] > '4')
            return make_error(ErrorType::kInvalidRequest, "tier must be 1, 2, 3 or 4");
        settings.tier = static_cast<std::uint32_t>(tier[0] - '0');
    }
    const auto flag = [&](const char* key) -> base::Result<bool> {
        if (!req.has_param(key)) return false;
        const std::string v = req.get_param_value(key);
        if (v == "true" || v == "1" || v.empty()) return true;
        if (v == "false" || v == "0") return false;
        return make_error(ErrorType::kInvalidRequest, std::string(key) + " must be true or false");
    };
    auto no_index = flag("no_index");
    if (!no_index) return no_index.error();
    settings.no_index = *no_index;
    if (rdf) {
        auto graph = text_param(req, "graph", 2048);
        if (!graph) return graph.error();
        settings.graph = *graph;
        auto format = text_param(req, "format", 32);
        if (!format) return format.error();
        settings.format = *format;
        auto lenient = flag("lenient");
        if (!lenient) return lenient.error();
        settings.lenient = *lenient;
    }
    if (auto checked = ingest::check_settings(settings); !checked) return checked.error();
    return settings;
}

// A folder of its own for one upload, removed with it.
class UploadDir {
public:
    UploadDir() {
        static std::atomic<std::uint64_t> counter{0};
        std::random_device random;
        // A name that upload_folder_prefix() covers: the guard redacts it wherever it shows.
        path_ = upload_folder_prefix().string() + std::to_string(random()) + "-" +
                std::to_string(counter.fetch_add(1));
    }
    UploadDir(const UploadDir&) = delete;
    UploadDir& operator=(const UploadDir&) = delete;
    ~UploadDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    base::Result<fs::path> write(const std::string& name, const std::string& body) {
        std::error_code ec;
        fs::create_directory(path_, ec);
        if (ec) return make_error(ErrorType::kInternal, "cannot stage the upload: " + ec.message());
        const fs::path file = path_ / name;
        std::ofstream out(file, std::ios::binary);
        out.write(body.data(), static_cast<std::streamsize>(body.size()));
        out.close();
        if (!out) return make_error(ErrorType::kInternal, "cannot stage the upload");
        return file;
    }
    // An error about the staged file names the upload, not where the gateway kept it: in its
    // message and in its place (the problem's `file`).
    base::Error named(base::Error error) const {
        const std::string prefix = path_.string() + "/";
        for (std::string* text : {&error.message, error.place ? &error.place->file : nullptr}) {
            if (text == nullptr) continue;
            for (auto at = text->find(prefix); at != std::string::npos; at = text->find(prefix))
                text->erase(at, prefix.size());
        }
        return error;
    }

private:
    fs::path path_;
};

// Skipped statements (lenient) and files, kept for the answer.
class CollectingObserver : public ingest::LoadObserver {
public:
    void skipped(const std::string& what) override {
        if (skipped_.size() < kMaxReported) skipped_.push_back(base::printable_utf8(what));
    }
    json reported() const { return skipped_; }

private:
    static constexpr std::size_t kMaxReported = 100;
    std::vector<std::string> skipped_;
};

void upload(Gateway::State& state, const httplib::Request& req, httplib::Response& res, bool rdf) {
    using Names = std::span<const std::string_view>;
    const Names parameters = rdf ? Names(kRdfParameters) : Names(kDocsParameters);
    if (!admit(req, res, RouteShape{parameters, kJsonOnly})) return;
    auto settings = settings_of(state, req, rdf);
    if (!settings) return send_error(res, settings.error());
    auto name = upload_name(req, rdf ? "upload.ttl" : "upload.txt");
    if (!name) return send_error(res, name.error());
    if (req.body.size() > state.config.max_upload_bytes)
        return send_problem(
            res, Problem{413, "PayloadTooLarge", "the upload is larger than the gateway accepts"});
    settings->source_iri = upload_iri(*name);
    UploadDir dir;
    auto file = dir.write(*name, req.body);
    if (!file) return send_error(res, file.error());
    CollectingObserver observer;
    const auto& bus = state.bus.config();
    auto totals = rdf ? ingest::load_rdf(bus, *settings, {*file}, observer)
                      : ingest::load_docs(bus, *settings, {*file}, observer);
    if (!totals) return send_error(res, dir.named(totals.error()));
    json body = ingest::totals_json(*settings, *totals, rdf);
    body["name"] = *name;
    body["skipped_items"] = observer.reported();
    body["request_id"] = request_id_of(res);
    base::component_logger("gateway")->info(
        "event=load kind={} name={} collection={} request_id={}", rdf ? "rdf" : "docs", *name,
        settings->collection, request_id_of(res));
    send_json(res, 200, body);
}

}  // namespace

void add_load_routes(Gateway::State& state) {
    state.server.Post("/api/v1/load/rdf",
                      [&state](const httplib::Request& req, httplib::Response& res) {
                          upload(state, req, res, true);
                      });
    state.server.Post("/api/v1/load/docs",
                      [&state](const httplib::Request& req, httplib::Response& res) {
                          upload(state, req, res, false);
                      });
}

}  // namespace glassbox::gateway
