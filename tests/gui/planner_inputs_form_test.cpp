// The planner's input form on the offscreen platform: its groups, its editors (type, range, unit,
// choices, tooltip), which settings it offers as the engine and scheme change, and the CLI's
// message under a bad value. Edits go through the widgets, as a user's would.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTest>

#include <gtest/gtest.h>

#include "collapsible_section.h"
#include "inputs_form.h"
#include "inputs_model.h"
#include "kvplan/plan/settings.h"
#include "main_window.h"

namespace kvplan::gui {
namespace {

template <typename T>
T* editor_of(const InputsForm& form, const char* flag) {
  auto* e = qobject_cast<T*>(form.editor(flag));
  EXPECT_NE(e, nullptr) << flag << " has no editor of the expected type";
  return e;
}

// Types into a line edit as a user does: clear, keys, Return.
void type_into(QLineEdit* edit, const QString& text) {
  if (edit == nullptr) return ADD_FAILURE() << "no line edit to type into";
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Delete);
  QTest::keyClicks(edit, text);
  QTest::keyClick(edit, Qt::Key_Return);
}

TEST(InputsForm, SectionsInTheSettingsOrder) {
  InputsModel model;
  InputsForm form(model);
  QStringList titles;
  for (CollapsibleSection* s : form.sections()) titles << s->title();
  EXPECT_EQ(titles, (QStringList{"Model", "Hardware", "Engine", "KV cache", "Workload", "SLO", "Cost"}));
  EXPECT_EQ(form.editor("no-such-setting"), nullptr);
  EXPECT_FALSE(form.is_shown("no-such-setting"));
  // Every setting has an editor.
  for (const plan::Setting& s : plan::settings()) EXPECT_NE(form.editor(s.flag), nullptr) << s.flag;
}

TEST(InputsForm, ChangingTheEngineSwapsItsMemoryKnobs) {
  InputsModel model;
  InputsForm form(model);
  EXPECT_TRUE(form.is_shown("gpu-memory-utilization"));
  EXPECT_FALSE(form.is_shown("mem-fraction-static"));
  auto* engine = editor_of<QComboBox>(form, "engine");
  ASSERT_NE(engine, nullptr);
  const int sglang = engine->findText("sglang");
  ASSERT_GE(sglang, 0);
  engine->setCurrentIndex(sglang);
  EXPECT_EQ(model.value("engine"), "sglang");
  EXPECT_TRUE(form.is_shown("mem-fraction-static"));
  EXPECT_FALSE(form.is_shown("gpu-memory-utilization"));
  EXPECT_FALSE(form.is_shown("engine-version"));
  // From the model's side too (a loaded scenario, the All flags table).
  model.set_value("engine", "trtllm");
  EXPECT_EQ(engine->currentText(), "trtllm");
  EXPECT_TRUE(form.is_shown("free-gpu-memory-fraction"));
  EXPECT_FALSE(form.is_shown("mem-fraction-static"));
  // A changed value is never hidden, nor a wrong one (the model keeps the default for it).
  model.set_value("mem-fraction-static", "0.8");
  EXPECT_TRUE(form.is_shown("mem-fraction-static"));
  model.set_value("mem-fraction-static", "0");
  EXPECT_FALSE(form.is_shown("mem-fraction-static"));
  model.set_value("gpu-memory-utilization", "lots");
  EXPECT_TRUE(form.is_shown("gpu-memory-utilization"));
  EXPECT_FALSE(form.shown_message("gpu-memory-utilization").isEmpty());
}

TEST(InputsForm, SchemeKnobsAppearWithTheirScheme) {
  InputsModel model;
  InputsForm form(model);
  EXPECT_FALSE(form.is_shown("streaming-sinks"));
  EXPECT_FALSE(form.is_shown("kivi-residual"));
  type_into(editor_of<QLineEdit>(form, "streaming-window"), "4096");
  EXPECT_EQ(model.value("streaming-window"), "4096");
  EXPECT_TRUE(form.is_shown("streaming-sinks"));
  EXPECT_FALSE(form.is_shown("h2o-budget"));
  auto* kv = editor_of<QComboBox>(form, "kv-cache-dtype");
  kv->setCurrentIndex(kv->findText("kivi2"));
  EXPECT_EQ(model.value("kv-cache-dtype"), "kivi2");
  EXPECT_TRUE(form.is_shown("kivi-residual"));
}

TEST(InputsForm, InvalidValueIsMarkedAtItsFieldWithTheCliMessage) {
  InputsModel model;
  InputsForm form(model);
  auto* block = editor_of<QLineEdit>(form, "block-size");
  ASSERT_NE(block, nullptr);
  type_into(block, "0");
  EXPECT_FALSE(model.valid());
  const QString msg = model.message("block-size");
  EXPECT_TRUE(msg.contains("--block-size=0")) << msg.toStdString();
  EXPECT_EQ(form.shown_message("block-size"), msg);
  EXPECT_TRUE(form.findChild<QLabel*>("message_block-size")->isVisibleTo(&form));
  EXPECT_TRUE(block->styleSheet().contains("border")) << block->styleSheet().toStdString();
  EXPECT_TRUE(form.shown_message("max-model-len").isEmpty());

  type_into(block, "32");
  EXPECT_TRUE(model.valid()) << model.first_error().toStdString();
  EXPECT_EQ(model.value("block-size"), "32");
  EXPECT_TRUE(form.shown_message("block-size").isEmpty());
  EXPECT_FALSE(form.findChild<QLabel*>("message_block-size")->isVisibleTo(&form));
  EXPECT_TRUE(block->styleSheet().isEmpty());

  // A spin box whose minimum is excluded (utilization must be > 0) takes the minimum, and says why not.
  auto* util = editor_of<QDoubleSpinBox>(form, "gpu-memory-utilization");
  ASSERT_NE(util, nullptr);
  util->setValue(0);
  EXPECT_FALSE(model.valid());
  EXPECT_EQ(form.shown_message("gpu-memory-utilization"), model.message("gpu-memory-utilization"));
  EXPECT_TRUE(form.shown_message("gpu-memory-utilization").startsWith("--gpu-memory-utilization=0 "))
      << form.shown_message("gpu-memory-utilization").toStdString();
  util->setValue(0.85);
  EXPECT_EQ(model.value("gpu-memory-utilization"), "0.85");
  EXPECT_TRUE(model.valid());
  EXPECT_TRUE(form.shown_message("gpu-memory-utilization").isEmpty());
}

TEST(InputsForm, ABadAdvancedValueOpensItsGroup) {
  InputsModel model;
  InputsForm form(model);
  CollapsibleSection* advanced = form.advanced_group("engine");
  ASSERT_NE(advanced, nullptr);
  EXPECT_FALSE(advanced->is_expanded());
  model.set_value("watermark", "0.9");  // above its maximum of 0.5
  EXPECT_TRUE(advanced->is_expanded());
  EXPECT_TRUE(advanced->title().contains("1 invalid")) << advanced->title().toStdString();
  EXPECT_EQ(form.shown_message("watermark"), model.message("watermark"));
  EXPECT_FALSE(form.shown_message("watermark").isEmpty());
}

TEST(InputsForm, SpinBoxesCarryTheRangeAndUnit) {
  InputsModel model;
  InputsForm form(model);
  const plan::Setting& ttft = plan::setting("slo-ttft-ms");
  auto* spin = editor_of<QDoubleSpinBox>(form, "slo-ttft-ms");
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->minimum(), *ttft.minimum);
  EXPECT_EQ(spin->maximum(), *ttft.maximum);
  EXPECT_EQ(spin->suffix(), " ms");
  const plan::Setting& replicas = plan::setting("replicas");
  auto* ispin = editor_of<QSpinBox>(form, "replicas");
  ASSERT_NE(ispin, nullptr);
  EXPECT_EQ(ispin->minimum(), static_cast<int>(*replicas.minimum));
  EXPECT_EQ(ispin->maximum(), static_cast<int>(*replicas.maximum));
  EXPECT_EQ(ispin->suffix(), " engine replicas");
  ispin->setValue(3);
  EXPECT_EQ(model.value("replicas"), "3");
  EXPECT_TRUE(form.is_shown("router"));  // three replicas have something to route between
  // Numbers show as the CLI writes them, not with six decimals.
  EXPECT_EQ(editor_of<QDoubleSpinBox>(form, "gpu-memory-utilization")->text(), "0.9");
  // Optional and unbounded numbers are line edits that say what empty means.
  auto* users = editor_of<QLineEdit>(form, "users");
  ASSERT_NE(users, nullptr);
  EXPECT_TRUE(users->placeholderText().contains("preset")) << users->placeholderText().toStdString();
}

// A field whose 0 stands for a default is shown empty, and says what the 0 is: the engine default
// the memory accounting uses (vLLM 0.10 V1 on an H100 80 GB: 1,024 sequences and 8,192 tokens,
// arg_utils _set_default_args_v1 for GPUs of 70 GiB or more; SGLang at TP 8: 0.81, server_args), or
// the note's meaning. Emptying a field sets its 0.
TEST(InputsForm, ZeroDefaultsShowWhatTheyStandFor) {
  InputsModel model;
  ASSERT_EQ(model.value("gpu"), "h100-sxm");
  InputsForm form(model);
  auto* seqs = editor_of<QLineEdit>(form, "max-num-seqs");
  auto* tokens = editor_of<QLineEdit>(form, "max-num-batched-tokens");
  auto* h2o = editor_of<QLineEdit>(form, "h2o-budget");
  ASSERT_TRUE(seqs && tokens && h2o);
  EXPECT_EQ(seqs->text(), "");
  EXPECT_TRUE(seqs->placeholderText().startsWith("1,024, the default of vLLM 0.10")) << seqs->placeholderText().toStdString();
  EXPECT_TRUE(tokens->placeholderText().startsWith("8,192, ")) << tokens->placeholderText().toStdString();
  EXPECT_EQ(h2o->text(), "");
  EXPECT_EQ(h2o->placeholderText(), "no H2O eviction");
  // An A100 (not one of vLLM's large-GPU defaults): 256 and 2,048.
  ASSERT_TRUE(model.set_value("gpu", "a100-80gb"));
  EXPECT_TRUE(seqs->placeholderText().startsWith("256, ")) << seqs->placeholderText().toStdString();
  EXPECT_TRUE(tokens->placeholderText().startsWith("2,048, ")) << tokens->placeholderText().toStdString();
  type_into(seqs, "64");
  EXPECT_EQ(model.value("max-num-seqs"), "64");
  EXPECT_EQ(seqs->text(), "64");
  type_into(seqs, "");
  EXPECT_EQ(model.value("max-num-seqs"), "0");
  EXPECT_EQ(seqs->text(), "");

  ASSERT_TRUE(model.set_value("gpu", "h200"));
  ASSERT_TRUE(model.set_value("engine", "sglang"));
  ASSERT_TRUE(model.set_value("tensor-parallel-size", "8"));
  auto* fraction = editor_of<QDoubleSpinBox>(form, "mem-fraction-static");
  ASSERT_NE(fraction, nullptr);
  ASSERT_TRUE(form.is_shown("mem-fraction-static"));
  EXPECT_EQ(fraction->value(), 0.0);
  EXPECT_EQ(fraction->text(), "0.81, SGLang's default at TP 8");
  ASSERT_TRUE(model.set_value("tensor-parallel-size", "2"));
  EXPECT_EQ(fraction->text(), "0.87, SGLang's default at TP 2");
  fraction->setValue(0.7);
  EXPECT_EQ(model.value("mem-fraction-static"), "0.7");
  EXPECT_EQ(fraction->text(), "0.7");
  // SGLang's batch limits are kvplan's assumption, and say so.
  EXPECT_TRUE(seqs->placeholderText().contains("kvplan assumes for sglang")) << seqs->placeholderText().toStdString();
}

TEST(InputsForm, ChoicesAreSearchableDropDowns) {
  InputsModel model;
  InputsForm form(model);
  auto* workload = editor_of<QComboBox>(form, "workload");
  ASSERT_NE(workload, nullptr);
  QStringList items;
  for (int i = 0; i < workload->count(); ++i) items << workload->itemText(i);
  EXPECT_EQ(items, (QStringList{"chat", "code", "rag", "agent", "batch"}));
  workload->setCurrentIndex(workload->findText("agent"));
  EXPECT_EQ(model.value("workload"), "agent");
  EXPECT_TRUE(form.is_shown("followup-lengths"));  // the agent preset's conversations have 8 turns

  // The GPU list filters by any part of a name, in any case.
  auto* gpu = editor_of<QComboBox>(form, "gpu");
  ASSERT_NE(gpu, nullptr);
  QCompleter* completer = gpu->completer();
  ASSERT_NE(completer, nullptr);
  EXPECT_EQ(completer->filterMode(), Qt::MatchContains);
  completer->setCompletionPrefix("SXM");
  EXPECT_GT(completer->completionCount(), 0);
  for (int i = 0; completer->setCurrentRow(i); ++i) {
    EXPECT_TRUE(completer->currentCompletion().contains("sxm", Qt::CaseInsensitive)) << completer->currentCompletion().toStdString();
  }
  // Text outside the list is still taken (a Hugging Face id, a path), and checked by the model.
  type_into(gpu->lineEdit(), "no-such-gpu");
  EXPECT_EQ(model.value("gpu"), "no-such-gpu");
  EXPECT_FALSE(model.valid());
  EXPECT_FALSE(form.shown_message("gpu").isEmpty());
  EXPECT_EQ(form.shown_message("gpu"), model.message("gpu"));
}

TEST(InputsForm, TooltipsCarryTheHelpText) {
  InputsModel model;
  InputsForm form(model);
  for (const char* flag : {"gpu-memory-utilization", "block-size", "workload", "enforce-eager"}) {
    const plan::Setting& s = plan::setting(flag);
    const QString tip = form.editor(flag)->toolTip();
    EXPECT_TRUE(tip.contains(QString::fromStdString(s.description))) << flag << ": " << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("--") + flag)) << tip.toStdString();
  }
}

TEST(InputsForm, WidgetEditsReachTheModelOnceAndModelEditsReachTheWidgets) {
  InputsModel model;
  InputsForm form(model);
  QSignalSpy changed(&model, &InputsModel::inputs_changed);
  auto* eager = editor_of<QCheckBox>(form, "enforce-eager");
  ASSERT_NE(eager, nullptr);
  eager->setChecked(true);
  EXPECT_EQ(model.value("enforce-eager"), "true");
  EXPECT_EQ(changed.count(), 1);  // writing the value back into the form does not edit again
  auto* len = editor_of<QLineEdit>(form, "max-model-len");
  type_into(len, "8192");
  EXPECT_EQ(model.value("max-model-len"), "8192");
  EXPECT_EQ(changed.count(), 2);

  model.set_value("max-model-len", "4096");
  EXPECT_EQ(len->text(), "4096");
  model.set_values({{"enforce-eager", "false"}, {"watermark", "0.01"}});
  EXPECT_FALSE(eager->isChecked());
  EXPECT_EQ(len->text(), "");  // back to its default: 0, which the placeholder spells out
  EXPECT_EQ(editor_of<QDoubleSpinBox>(form, "watermark")->value(), 0.01);
  // A loaded scenario that changes an advanced value opens its group.
  EXPECT_TRUE(form.advanced_group("engine")->is_expanded());
  EXPECT_FALSE(form.advanced_group("kv_cache")->is_expanded());
  form.set_advanced_expanded(true);
  EXPECT_TRUE(form.advanced_group("kv_cache")->is_expanded());
}

TEST(InputsForm, FoldingAGroupGivesBackItsHeight) {
  InputsModel model;
  InputsForm form(model);
  form.show();
  QApplication::processEvents();
  CollapsibleSection* engine = form.sections()[2];
  const int folded = engine->sizeHint().height();
  form.set_advanced_expanded(true);
  QApplication::processEvents();
  EXPECT_GT(engine->sizeHint().height(), folded);
  form.set_advanced_expanded(false);
  QApplication::processEvents();
  EXPECT_EQ(engine->sizeHint().height(), folded);  // no blank band where the Advanced rows were
}

TEST(InputsForm, TheWindowHasTheFormAndKeepsTheFlatTable) {
  MainWindow w;
  ASSERT_NE(w.findChild<QTableView*>("inputs_view"), nullptr);
  auto* engine = qobject_cast<QComboBox*>(w.inputs_form().editor("engine"));
  ASSERT_NE(engine, nullptr);
  engine->setCurrentIndex(engine->findText("sglang"));
  EXPECT_EQ(w.inputs().value("engine"), "sglang");
}

}  // namespace
}  // namespace kvplan::gui
