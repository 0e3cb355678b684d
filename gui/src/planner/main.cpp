// kvplan-gui — the desktop planner.
//
//   kvplan-gui [--scenario FILE]
//   kvplan-gui --screenshot DIR [--scenario FILE]   // grab every view into DIR/*.png and exit
//   kvplan-gui --bench [N]                          // time N input changes (5 schemes x 200 points)
#include <QApplication>
#include <QComboBox>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "main_window.h"
#include "kvplan/plan/data_dir.h"

namespace {

using kvplan::gui::MainWindow;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// An input change (gpu-memory-utilization toggled) until every chart of the visible view has been
// painted: analysis, model updates, series replace(), and a full render of the window.
int run_bench(MainWindow& w, int n) {
  w.set_schemes(kvplan::gui::default_schemes());
  const int capacity_view = static_cast<int>(w.view_names().indexOf(QStringLiteral("Users vs context")));
  w.show_view(capacity_view);
  w.show();
  QApplication::processEvents();
  std::vector<double> analysis_ms, update_ms, total_ms, provisional_ms, window_ms;
  for (int i = 0; i < n; ++i) {
    QElapsedTimer clock;
    clock.start();
    w.inputs().set_value("gpu-memory-utilization", i % 2 == 0 ? "0.85" : "0.9");
    w.view_widget(capacity_view)->grab();  // paints the chart and its table now
    total_ms.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
    analysis_ms.push_back(w.last_analysis_ms());
    update_ms.push_back(w.last_update_ms());
    provisional_ms.push_back(w.last_provisional_ms());
  }
  // The whole window (inputs form, banner, answer panel, the visible view) painted after an input
  // change: what the user sees repaint. The capacity search that follows runs on its own thread.
  for (int i = 0; i < n; ++i) {
    QElapsedTimer clock;
    clock.start();
    w.inputs().set_value("gpu-memory-utilization", i % 2 == 0 ? "0.85" : "0.9");
    w.grab();
    window_ms.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
  }
  w.capacity_job().cancel();
  std::printf("kvplan-gui --bench: %d input changes, %d schemes x %d points\n", n,
              w.capacity_model().scheme_count(), w.capacity_model().rowCount());
  std::printf("  analysis (5 plans + users-vs-context curves): median %.3f ms, max %.3f ms\n", median(analysis_ms),
              *std::max_element(analysis_ms.begin(), analysis_ms.end()));
  std::printf("  analysis + models + chart series:             median %.3f ms, max %.3f ms\n", median(update_ms),
              *std::max_element(update_ms.begin(), update_ms.end()));
  std::printf("  input change to painted view (grab):          median %.3f ms, max %.3f ms\n", median(total_ms),
              *std::max_element(total_ms.begin(), total_ms.end()));
  std::printf("  input change to provisional answer:           median %.3f ms, max %.3f ms\n", median(provisional_ms),
              *std::max_element(provisional_ms.begin(), provisional_ms.end()));
  std::printf("  input change to painted window (grab):        median %.3f ms, max %.3f ms\n", median(window_ms),
              *std::max_element(window_ms.begin(), window_ms.end()));
  // The engine picked in the form's drop-down (vllm <-> sglang: knobs shown and hidden, every view
  // recomputed) until the whole form has been painted again.
  auto* engine = qobject_cast<QComboBox*>(w.inputs_form().editor("engine"));
  std::vector<double> form_ms;
  for (int i = 0; i < n; ++i) {
    QElapsedTimer clock;
    clock.start();
    engine->setCurrentIndex(engine->findText(i % 2 == 0 ? QStringLiteral("sglang") : QStringLiteral("vllm")));
    w.inputs_form().grab();
    form_ms.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
  }
  std::printf("  engine picked in the form to painted form:    median %.3f ms, max %.3f ms\n", median(form_ms),
              *std::max_element(form_ms.begin(), form_ms.end()));
  return 0;
}

bool grab_window(MainWindow& w, const QDir& dir, const QString& view, const QString& file) {
  w.show_view(static_cast<int>(w.view_names().indexOf(view)));
  QApplication::processEvents();
  return w.grab().save(dir.filePath(file));
}

void wait_or_say(bool done, const char* what) {
  if (!done) std::fprintf(stderr, "kvplan-gui: %s did not finish within 5 minutes; its screenshot shows it unfinished\n", what);
}

// The answer views of issue 15, in the order a planner meets them: the answer itself, the knee, a
// comparison (the inputs pinned, then fp8 KV), the deployments front, and the warning for an
// architecture kvplan does not support (OLMo-2's config.json: model_type olmo2 is not in the
// supported list, so it is answered only when asked to read it as a generic decoder, and flagged).
// gpt-oss, the model the issue found unflagged, is now understood (its preset and MXFP4 weights).
int save_answer_screenshots(MainWindow& w, const QDir& dir) {
  int written = 0;
  wait_or_say(w.wait_for_answer(300'000), "the capacity search");
  written += grab_window(w, dir, QStringLiteral("Memory"), QStringLiteral("answer.png"));
  written += grab_window(w, dir, QStringLiteral("Latency vs load"), QStringLiteral("latency-vs-load.png"));

  const std::string dtype = w.inputs().value("kv-cache-dtype");
  w.compare_view().pin_current();
  w.inputs().set_value("kv-cache-dtype", "fp8");
  wait_or_say(w.wait_for_answer(300'000), "the capacity search (fp8)");
  wait_or_say(w.compare_view().job().wait_for_idle(300'000), "the pinned scenario's search");
  written += grab_window(w, dir, QStringLiteral("Compare"), QStringLiteral("compare.png"));
  w.inputs().set_value("kv-cache-dtype", dtype);
  wait_or_say(w.wait_for_answer(300'000), "the capacity search");

  kvplan::gui::DeploymentsView& d = w.deployments_view();
  d.set_target_users(2000);
  if (d.start_search()) wait_or_say(d.job().wait_for_idle(300'000), "the deployment search");
  written += grab_window(w, dir, QStringLiteral("Deployments"), QStringLiteral("deployments.png"));

  QTemporaryDir tmp;
  const QString config = tmp.filePath(QStringLiteral("config.json"));
  QFile f(config);
  if (f.open(QIODevice::WriteOnly)) {
    // allenai/OLMo-2-1124-7B config.json (Hugging Face), the fields kvplan reads.
    f.write(R"({"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "hidden_size": 4096,
                "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 32, "vocab_size": 100352, "max_position_embeddings": 4096,
                "torch_dtype": "float32"})");
    f.close();
    w.inputs().set_value("allow-unknown-architecture", "true");
    w.inputs().set_value("model", config.toStdString());
    // Its context is 4,096 tokens: chat prompts from the Azure trace would be refused (longer than
    // max_model_len), so this picture uses fixed 1,024 + 256-token requests.
    w.inputs().set_value("max-model-len", "4096");
    w.inputs().set_value("prompt-lengths", "fixed:1024");
    w.inputs().set_value("output-lengths", "fixed:256");
    wait_or_say(w.wait_for_answer(300'000), "the capacity search (OLMo-2)");
    written += grab_window(w, dir, QStringLiteral("Memory"), QStringLiteral("unsupported-model-warning.png"));
  }
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("kvplan-gui"));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("KV cache capacity planner"));
  parser.addHelpOption();
  QCommandLineOption scenario(QStringLiteral("scenario"), QStringLiteral("Scenario JSON to open."), QStringLiteral("FILE"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save a PNG of every view into DIR and exit."), QStringLiteral("DIR"));
  QCommandLineOption bench(QStringLiteral("bench"), QStringLiteral("Time input changes and exit."));
  QCommandLineOption bench_runs(QStringLiteral("bench-runs"), QStringLiteral("Input changes to time (default 50)."), QStringLiteral("N"), QStringLiteral("50"));
  parser.addOptions({scenario, screenshot, bench, bench_runs});
  parser.process(app);

  MainWindow w;
  QString scenario_path = parser.value(scenario);
  if (scenario_path.isEmpty() && parser.isSet(screenshot)) {
    const QString shipped = QString::fromStdString(kvplan::plan::data_dir()) + "/scenarios/chat-h100.json";
    if (QFileInfo::exists(shipped)) scenario_path = shipped;
  }
  if (!scenario_path.isEmpty()) {
    try {
      w.load_scenario(scenario_path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kvplan-gui: %s (using the defaults)\n", e.what());
      if (parser.isSet(scenario)) return 2;
    }
  }
  if (parser.isSet(bench)) return run_bench(w, std::max(1, parser.value(bench_runs).toInt()));
  w.show();
  if (parser.isSet(screenshot)) {
    QApplication::processEvents();
    if (!w.wait_for_answer(300'000)) std::fprintf(stderr, "kvplan-gui: no capacity answer within 5 minutes\n");
    if (w.start_simulation()) {
      if (!w.runner().wait_for_idle(300'000)) {
        std::fprintf(stderr, "kvplan-gui: the simulation took longer than 5 minutes; screenshots without it\n");
        w.runner().cancel();
        w.runner().wait_for_idle(60'000);
      }
    } else {
      std::fprintf(stderr, "kvplan-gui: simulation not started: %s\n", qPrintable(w.inputs().first_error()));
    }
    int n = w.save_screenshots(parser.value(screenshot));
    n += save_answer_screenshots(w, QDir(parser.value(screenshot)));
    std::printf("kvplan-gui: %d screenshots in %s\n", n, qPrintable(parser.value(screenshot)));
    return n > 0 ? 0 : 1;
  }
  return QApplication::exec();
}
