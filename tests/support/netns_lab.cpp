// Network namespaces joined by a bridge, made and removed with `ip` (see netns_lab.hpp).
#include "tests/support/netns_lab.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "tests/support/process.hpp"

namespace glassbox::integration {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kIpTimeout{10'000};
constexpr const char* kNamePrefix = "gbh-";

std::string find_ip_binary() {
    for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
        if (::access(path, X_OK) == 0) return path;
    }
    return {};
}

std::string describe(const CommandResult& result) {
    std::string text = result.err.empty() ? result.out : result.err;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text.empty() ? result.status.describe() : text;
}

bool process_alive(long pid) {
    return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

}  // namespace

NetnsLab::NetnsLab(std::string ip, std::filesystem::path log_dir, std::string prefix)
    : ip_binary_(std::move(ip)), log_dir_(std::move(log_dir)), prefix_(std::move(prefix)) {}

std::string NetnsLab::ip(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{ip_binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto result = run_command(argv, log_dir_, kIpTimeout);
    if (!result.timed_out && result.status.exited && result.status.code == 0) return {};
    std::string command = "ip";
    for (const auto& a : args) command += " " + a;
    return command + ": " + describe(result);
}

std::variant<std::unique_ptr<NetnsLab>, std::string> NetnsLab::create(
    const std::vector<std::string>& names, const std::string& subnet_prefix,
    const std::filesystem::path& log_dir) {
    if (names.empty() || names.size() > 200)
        throw std::invalid_argument("NetnsLab: 1 to 200 hosts");
    const std::string ip = find_ip_binary();
    if (ip.empty()) return std::string("no `ip` command (iproute2 is not installed)");
    const std::string prefix = kNamePrefix + std::to_string(::getpid()) + "-";
    std::unique_ptr<NetnsLab> lab(new NetnsLab(ip, log_dir, prefix));

    // A test killed before its destructor ran (a CTest timeout) leaves its namespaces: remove
    // those whose test process is gone. Never another running test's.
    {
        const auto listed = run_command({ip, "netns", "list"}, log_dir, kIpTimeout);
        const std::regex ours("^(gbh-([0-9]+)-[a-z0-9]+)");
        std::istringstream lines(listed.out);
        for (std::string line; std::getline(lines, line);) {
            std::smatch m;
            if (std::regex_search(line, m, ours) && !process_alive(std::stol(m[2].str()))) {
                (void)lab->ip({"netns", "del", m[1].str()});
            }
        }
    }

    lab->switch_netns_ = prefix + "sw";
    if (auto failed = lab->ip({"netns", "add", lab->switch_netns_}); !failed.empty()) {
        return "cannot create network namespaces here (needs root or CAP_NET_ADMIN): " + failed;
    }
    lab->created_.push_back(lab->switch_netns_);
    auto fail = [](const std::string& error) {
        return "setting up the network namespaces failed: " + error;
    };
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"-n", lab->switch_netns_, "link", "add", "br0", "type", "bridge"},
             {"-n", lab->switch_netns_, "link", "set", "br0", "up"}}) {
        if (auto failed = lab->ip(args); !failed.empty()) return fail(failed);
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
        Host host{names[i], prefix + names[i], subnet_prefix + std::to_string(i + 1),
                  "port-" + names[i]};
        if (auto failed = lab->ip({"netns", "add", host.netns}); !failed.empty())
            return fail(failed);
        lab->created_.push_back(host.netns);
        const std::vector<std::vector<std::string>> steps = {
            {"-n", host.netns, "link", "set", "lo", "up"},
            {"-n", lab->switch_netns_, "link", "add", host.port, "type", "veth", "peer", "name",
             "eth0", "netns", host.netns},
            {"-n", lab->switch_netns_, "link", "set", host.port, "master", "br0"},
            {"-n", lab->switch_netns_, "link", "set", host.port, "up"},
            {"-n", host.netns, "addr", "add", host.address + "/24", "dev", "eth0"},
            {"-n", host.netns, "link", "set", "eth0", "up"},
        };
        for (const auto& args : steps) {
            if (auto failed = lab->ip(args); !failed.empty()) return fail(failed);
        }
        lab->hosts_.push_back(std::move(host));
    }
    return lab;
}

NetnsLab::~NetnsLab() {
    // Deleting a namespace removes its interfaces (and the veth peers with them) once no process
    // runs in it any more: the test stops its processes first.
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) (void)ip({"netns", "del", *it});
}

const NetnsLab::Host& NetnsLab::host(const std::string& name) const {
    for (const auto& host : hosts_) {
        if (host.name == name) return host;
    }
    throw std::invalid_argument("NetnsLab: no host " + name);
}

std::vector<std::string> NetnsLab::in_host(const std::string& name,
                                           const std::vector<std::string>& argv) const {
    std::vector<std::string> out{ip_binary_, "netns", "exec", host(name).netns};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

bool NetnsLab::set_link(const std::string& name, bool up) {
    return ip({"-n", switch_netns_, "link", "set", host(name).port, up ? "up" : "down"}).empty();
}

}  // namespace glassbox::integration
