// `glassbox up` with sparql.engine = "virtuoso": Virtuoso started, awaited and secured.
#include "cli/virtuoso_up.hpp"

#include "base/log.hpp"
#include "cli/settings.hpp"
#include "http/virtuoso_instance.hpp"

namespace glassbox::cli {

namespace fs = std::filesystem;
using base::ErrorType;
using base::make_error;

namespace {

// The instance's folder and ports: the SQL port any free one, the HTTP port sparql.port's.
base::Result<http::virtuoso::Instance> plan_instance(const fs::path& home) {
    http::virtuoso::Instance instance;
    instance.dir = home / "virtuoso";
    auto sql_port = http::virtuoso::free_loopback_port();
    if (!sql_port) return std::move(sql_port).error();
    instance.sql_port = *sql_port;
    const auto configured = settings().integer("sparql.port");
    if (configured != 0) {
        instance.http_port = static_cast<std::uint16_t>(configured);
    } else {
        auto http_port = http::virtuoso::free_loopback_port();
        if (!http_port) return std::move(http_port).error();
        instance.http_port = *http_port;
    }
    return instance;
}

}  // namespace

base::Result<std::optional<http::SparqlConfig>> start_virtuoso(ProcessSupervisor& supervisor,
                                                               const fs::path& home,
                                                               const sigset_t& stop_signals) {
    if (const auto missing = http::virtuoso::unavailable()) {
        return make_error(ErrorType::kInvalidRequest, "sparql.engine = \"virtuoso\": " + *missing);
    }
    auto instance = plan_instance(home);
    if (!instance) return std::move(instance).error();
    if (auto written = http::virtuoso::write_ini(*instance); !written)
        return std::move(written).error();
    const fs::path log_file = home / "logs" / "virtuoso.log";
    if (auto started = supervisor.start(
            ChildSpec{"virtuoso", http::virtuoso::server_argv(*instance), log_file});
        !started) {
        return std::move(started).error();
    }
    const auto give_up = std::chrono::steady_clock::now() + kVirtuosoStartWait;
    while (!http::virtuoso::answers(*instance, std::chrono::milliseconds{500})) {
        if (std::chrono::steady_clock::now() > give_up) {
            return make_error(
                ErrorType::kTimeout,
                "Virtuoso did not answer on 127.0.0.1:" + std::to_string(instance->http_port) +
                    " within " + std::to_string(kVirtuosoStartWait.count() / 1000) + " s; see " +
                    log_file.string());
        }
        if (supervisor.supervise_once(std::chrono::milliseconds{100}, stop_signals))
            return std::optional<http::SparqlConfig>{};
    }
    auto secured = http::virtuoso::secure(
        *instance, std::chrono::milliseconds{settings().integer("sparql.timeout_ms")});
    if (!secured) return std::move(secured).error();
    base::component_logger("up")->info("event=virtuoso_ready endpoint={} dir={}",
                                       secured->query_url, instance->dir.string());
    return std::optional<http::SparqlConfig>(std::move(secured).value());
}

}  // namespace glassbox::cli
