// Hosts for multi-host tests on one machine: Linux network namespaces, one per host, each with
// `lo` up and an `eth0` on a private subnet, joined by a bridge in a namespace of its own (the
// "switch"). Made with iproute2's `ip` (root or CAP_NET_ADMIN), removed by the destructor.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace glassbox::integration {

class NetnsLab {
public:
    struct Host {
        std::string name;     // as the test calls it ("a")
        std::string netns;    // the namespace: "gbh-<pid>-<name>"
        std::string address;  // its eth0 address, e.g. 10.231.77.2
        std::string port;     // its cable's end on the switch: "port-<name>"
    };

    // Creates one namespace per name (at most 200), with addresses <subnet_prefix>1, 2, ... in
    // order (a /24: prefix "10.231.77."), plus the switch. Namespaces left by a test process that
    // no longer runs are removed first. The error, when namespaces cannot be made here (not root,
    // no `ip`): a sentence for GTEST_SKIP.
    static std::variant<std::unique_ptr<NetnsLab>, std::string> create(
        const std::vector<std::string>& names, const std::string& subnet_prefix,
        const std::filesystem::path& log_dir);
    ~NetnsLab();
    NetnsLab(const NetnsLab&) = delete;
    NetnsLab& operator=(const NetnsLab&) = delete;

    const Host& host(const std::string& name) const;
    // `argv` run inside the host's namespace: {ip, netns, exec, <netns>, argv...} (`ip netns exec`
    // execs the command itself, so the pid and signals are the command's).
    std::vector<std::string> in_host(const std::string& name,
                                     const std::vector<std::string>& argv) const;
    // Takes the host's cable out of (false) or back into (true) the switch: `ip link set
    // port-<name> down|up` in the switch namespace. The host keeps its address; packets to and
    // from it are dropped meanwhile, as with a pulled cable. An `ip` that fails: false.
    bool set_link(const std::string& name, bool up);

private:
    NetnsLab(std::string ip, std::filesystem::path log_dir, std::string prefix);
    // Runs `ip args...`; its stderr when it fails, "" when it succeeds.
    std::string ip(const std::vector<std::string>& args) const;
    std::string ip_binary_;
    std::filesystem::path log_dir_;
    std::string prefix_;  // "gbh-<pid>-"
    std::string switch_netns_;
    std::vector<Host> hosts_;
    std::vector<std::string> created_;  // namespaces to delete, in creation order
};

}  // namespace glassbox::integration
