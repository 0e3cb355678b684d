// Builds the step DAG with Boost.Graph and takes its longest path (see step_graph.h).
#include "internal/step_graph.h"

#include <algorithm>
#include <cassert>
#include <iterator>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

namespace kvplan::sim::internal {

namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

class DagBuilder {
 public:
  explicit DagBuilder(std::size_t reserve) {
    weight_.reserve(reserve);
    source_ = node(0.0);
  }

  Vertex node(double w) {
    Vertex v = boost::add_vertex(g_);
    weight_.push_back(w);
    return v;
  }
  void edge(Vertex a, Vertex b) { boost::add_edge(a, b, g_); }

  // Chain on the compute stream. With collapsing, weight accumulates in an open node until a side
  // edge has to enter the chain (cut()).
  void chain(double w, bool collapse) {
    if (collapse && open_) {
      weight_[chain_tail_] += w;
      return;
    }
    Vertex v = node(w);
    edge(chain_tail_valid_ ? chain_tail_ : source_, v);
    chain_tail_ = v;
    chain_tail_valid_ = true;
    open_ = collapse;
  }
  // The next chain op receives a side edge: start a new node for it and return it.
  Vertex chain_entry(double w) {
    open_ = false;
    chain(w, false);
    open_ = true;
    return chain_tail_;
  }

  double longest_path() {
    const Vertex sink = node(0.0);
    if (chain_tail_valid_) edge(chain_tail_, sink);
    for (Vertex v : loose_) edge(v, sink);
    std::vector<Vertex> order;
    order.reserve(weight_.size());
    boost::topological_sort(g_, std::back_inserter(order));  // reverse topological order
    std::vector<double> start(weight_.size(), 0.0);
    double best = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const double finish = start[*it] + weight_[*it];
      best = std::max(best, finish);
      for (auto [e, end] = boost::out_edges(*it, g_); e != end; ++e) {
        Vertex u = boost::target(*e, g_);
        start[u] = std::max(start[u], finish);
      }
    }
    return best;
  }

  Vertex source() const { return source_; }
  std::vector<Vertex> loose_;  // nodes that only have to finish by the end of the step

 private:
  Graph g_;
  std::vector<double> weight_;
  Vertex source_ = 0;
  Vertex chain_tail_ = 0;
  bool chain_tail_valid_ = false;
  bool open_ = false;
};

// Sum of a type's ops: before its attention op, and from it (the collapsed DAG's two parts).
void type_sums(const StepOps& ops, const std::vector<double>& op_ns, std::vector<double>& pre,
               std::vector<double>& post) {
  pre.assign(ops.types.size(), 0.0);
  post.assign(ops.types.size(), 0.0);
  for (std::size_t t = 0; t < ops.types.size(); ++t) {
    const StepLayerType& type = ops.types[t];
    const int cut = type.attention_op >= 0 ? type.attention_op : type.end_op;
    for (int i = type.first_op; i < type.end_op; ++i) (i < cut ? pre[t] : post[t]) += op_ns[static_cast<size_t>(i)];
  }
}

// The collapsed DAG of a step without offload copies is source -> one node -> sink: the node's
// weight is summed here in the same order as DagBuilder::chain() sums it, and longest_path() of
// that graph is max(0, weight), so the result is the same to the bit without building the graph
// (most memo misses of a simulation land here, and the graph's allocations cost more than the
// arithmetic).
double single_chain_ns(const StepOps& ops, const std::vector<double>& op_ns) {
  bool open = false;
  double w = 0;
  auto chain = [&](double x) {
    if (open) {
      w += x;
    } else {
      w = x;
      open = true;
    }
  };
  for (int i = 0; i < ops.prologue_end; ++i) chain(op_ns[static_cast<size_t>(i)]);
  std::vector<double> pre, post;
  type_sums(ops, op_ns, pre, post);
  for (int type_index : ops.layer_types) {
    chain(pre[static_cast<std::size_t>(type_index)] + post[static_cast<std::size_t>(type_index)]);
  }
  for (int i = ops.epilogue_begin; i < ops.epilogue_end; ++i) chain(op_ns[static_cast<size_t>(i)]);
  return open ? std::max(0.0, w) : 0.0;
}

}  // namespace

double step_critical_path_ns(const StepOps& ops, const std::vector<double>& op_ns, bool collapse) {
  assert(op_ns.size() == ops.ops.size());
  if (collapse && ops.swap_in_op < 0 && ops.swap_out_op < 0) return single_chain_ns(ops, op_ns);
  const bool swap_in = ops.swap_in_op >= 0;
  DagBuilder dag(collapse ? 8 + (swap_in ? 3 * ops.layer_types.size() : 0)
                          : ops.ops.size() * 2 + ops.layer_types.size() * 16);

  for (int i = 0; i < ops.prologue_end; ++i) dag.chain(op_ns[static_cast<size_t>(i)], collapse);

  // Per layer-type sums, for collapsed layers: before and from the attention op.
  std::vector<double> pre, post;
  type_sums(ops, op_ns, pre, post);

  const double copy_ns = swap_in ? op_ns[static_cast<size_t>(ops.swap_in_op)] : 0.0;
  Vertex copy_tail = dag.source();
  for (int type_index : ops.layer_types) {
    const StepLayerType& type = ops.types[static_cast<std::size_t>(type_index)];
    const bool copies = swap_in && type.holds_kv;
    Vertex copy = 0;
    if (copies) {
      copy = dag.node(copy_ns);
      dag.edge(copy_tail, copy);
      copy_tail = copy;
    }
    if (collapse) {
      if (!copies || type.attention_op < 0) {
        dag.chain(pre[static_cast<std::size_t>(type_index)] + post[static_cast<std::size_t>(type_index)], true);
        if (copies) dag.loose_.push_back(copy);  // nothing reads it this step
        continue;
      }
      dag.chain(pre[static_cast<std::size_t>(type_index)], true);
      Vertex attention = dag.chain_entry(post[static_cast<std::size_t>(type_index)]);
      dag.edge(copy, attention);
      continue;
    }
    for (int i = type.first_op; i < type.end_op; ++i) {
      const double w = op_ns[static_cast<std::size_t>(i)];
      if (copies && i == type.attention_op) {
        dag.edge(copy, dag.chain_entry(w));
      } else {
        dag.chain(w, false);
      }
    }
    if (copies && type.attention_op < 0) dag.loose_.push_back(copy);  // nothing reads it this step
  }
  if (swap_in && ops.num_kv_layers == 0) {
    // No KV layer on this stage: the copy only has to finish by the end of the step.
    Vertex copy = dag.node(copy_ns);
    dag.edge(dag.source(), copy);
    dag.loose_.push_back(copy);
  }

  for (int i = ops.epilogue_begin; i < ops.epilogue_end; ++i) dag.chain(op_ns[static_cast<size_t>(i)], collapse);

  if (ops.swap_out_op >= 0) {
    Vertex out = dag.node(op_ns[static_cast<size_t>(ops.swap_out_op)]);
    dag.edge(dag.source(), out);
    dag.loose_.push_back(out);
  }
  return dag.longest_path();
}

}  // namespace kvplan::sim::internal
