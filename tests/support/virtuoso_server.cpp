// VirtuosoServer: http/virtuoso_instance.hpp's instance as a test's child process.
#include "tests/support/virtuoso_server.hpp"

#include <stdexcept>

#include "tests/support/wait_until.hpp"

namespace glassbox::integration {

namespace {

constexpr std::chrono::milliseconds kStartGuard{90'000};

}  // namespace

std::optional<std::string> VirtuosoServer::skip_reason() { return http::virtuoso::unavailable(); }

std::optional<VirtuosoServer> VirtuosoServer::start(const std::filesystem::path& dir) {
    if (skip_reason()) return std::nullopt;
    VirtuosoServer server;
    server.instance_.dir = dir;
    for (std::uint16_t* port : {&server.instance_.sql_port, &server.instance_.http_port}) {
        auto free = http::virtuoso::free_loopback_port();
        if (!free) throw std::runtime_error(free.error().describe());
        *port = *free;
    }
    if (auto written = http::virtuoso::write_ini(server.instance_); !written)
        throw std::runtime_error(written.error().describe());
    server.server_ = std::make_unique<ChildProcess>(
        "virtuoso", http::virtuoso::server_argv(server.instance_), dir);
    const bool up = test_support::wait_until(
        [&server] {
            return !server.server_->running() || http::virtuoso::answers(server.instance_);
        },
        kStartGuard, std::chrono::milliseconds{50});
    if (!up || !server.server_->running())
        throw std::runtime_error("Virtuoso did not start in " + dir.string() + ":\n" +
                                 server.log());
    auto secured = http::virtuoso::secure(server.instance_, std::chrono::milliseconds{30'000});
    if (!secured) {
        throw std::runtime_error("Virtuoso in " + dir.string() +
                                 " could not be secured: " + secured.error().describe());
    }
    server.config_ = std::move(secured).value();
    return server;
}

VirtuosoServer::~VirtuosoServer() { stop(); }

bool VirtuosoServer::running() { return server_ && server_->running(); }

void VirtuosoServer::stop() {
    if (server_) server_->terminate(std::chrono::milliseconds{20'000});
}

std::string VirtuosoServer::log() const {
    if (!server_) return {};
    return server_->stdout_text() + server_->stderr_text();
}

}  // namespace glassbox::integration
