// The charts `glassbox eval` writes (cli/eval/eval_charts.hpp): plain SVG, no script, so a
// browser, the viewer or a report can show them as they are.
#include "cli/eval/eval_charts.hpp"

#include <cstdio>
#include <string_view>

namespace glassbox::cli::eval {
namespace {

constexpr double kLeft = 60.0;  // the plot area inside a 400 × 400 document
constexpr double kTop = 40.0;
constexpr double kSide = 300.0;

std::string number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
    return buffer;
}

double x_of(double share) { return kLeft + share * kSide; }
double y_of(double share) { return kTop + (1.0 - share) * kSide; }

std::string text(double x, double y, std::string_view words, std::string_view anchor = "middle") {
    return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" text-anchor=\"" +
           std::string(anchor) + "\">" + std::string(words) + "</text>\n";
}

// The document's head, title, frame, ticks at every fifth and the two axis names.
std::string open_chart(std::string_view title, std::string_view x_name, std::string_view y_name) {
    std::string svg =
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"400\" "
        "viewBox=\"0 0 400 400\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<title>" +
        std::string(title) +
        "</title>\n<rect width=\"400\" height=\"400\" "
        "fill=\"white\"/>\n";
    svg += text(200, 22, title);
    svg += "<rect x=\"" + number(kLeft) + "\" y=\"" + number(kTop) + "\" width=\"" + number(kSide) +
           "\" height=\"" + number(kSide) + "\" fill=\"none\" stroke=\"#444\"/>\n";
    for (int i = 0; i <= 5; ++i) {
        const double share = i / 5.0;
        svg += text(x_of(share), kTop + kSide + 16, number(share));
        svg += text(kLeft - 6, y_of(share) + 4, number(share), "end");
    }
    svg += text(kLeft + kSide / 2, 385, x_name);
    svg += "<text x=\"16\" y=\"" + number(kTop + kSide / 2) +
           "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + number(kTop + kSide / 2) +
           ")\">" + std::string(y_name) + "</text>\n";
    return svg;
}

std::string no_confidence(std::string svg) {
    svg += text(kLeft + kSide / 2, kTop + kSide / 2, "no confidence: the answers carried none");
    return svg + "</svg>\n";
}

}  // namespace

std::string reliability_svg(const EvalSummary& summary) {
    std::string svg = open_chart("Reliability", "confidence", "accuracy");
    if (!summary.ece) return no_confidence(std::move(svg));
    svg += "<line x1=\"" + number(x_of(0)) + "\" y1=\"" + number(y_of(0)) + "\" x2=\"" +
           number(x_of(1)) + "\" y2=\"" + number(y_of(1)) +
           "\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n";
    for (const auto& bin : summary.bins) {
        if (bin.questions == 0) continue;
        const double width = (bin.upper - bin.lower) * kSide;
        svg += "<rect x=\"" + number(x_of(bin.lower) + 1) + "\" y=\"" + number(y_of(bin.accuracy)) +
               "\" width=\"" + number(width - 2) + "\" height=\"" + number(bin.accuracy * kSide) +
               "\" fill=\"#4a7ab5\" fill-opacity=\"0.6\"/>\n";
        svg += "<circle cx=\"" + number(x_of(bin.mean_confidence)) + "\" cy=\"" +
               number(y_of(bin.accuracy)) + "\" r=\"3\" fill=\"#b54a4a\"/>\n";
        svg += text(x_of((bin.lower + bin.upper) / 2), y_of(bin.accuracy) - 4,
                    std::to_string(bin.questions));
    }
    svg += text(kLeft + 6, kTop + 16, "ECE " + number(*summary.ece * 100.0) + " %", "start");
    return svg + "</svg>\n";
}

std::string risk_coverage_svg(const EvalSummary& summary) {
    std::string svg = open_chart("Risk against coverage", "coverage", "error rate of kept answers");
    if (!summary.ece || summary.curve.empty()) return no_confidence(std::move(svg));
    svg += "<polyline fill=\"none\" stroke=\"#4a7ab5\" stroke-width=\"2\" points=\"";
    for (const auto& point : summary.curve) {
        svg += number(x_of(point.coverage)) + "," + number(y_of(1.0 - point.accuracy)) + " ";
    }
    svg += "\"/>\n";
    return svg + "</svg>\n";
}

}  // namespace glassbox::cli::eval
