// Structural checks on the top-level graph, done before onnx::checker so the errors
// name the node and value at fault, and a topological sort (ONNX requires sorted
// nodes, but files from hand-written exporters are not always sorted).
#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "converter/errors.h"
#include "converter/onnx_util.h"

namespace dl::conv::detail {
namespace {

constexpr int kGraphInput = -1;  // producer index of graph inputs and initializers

std::string describe(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

void collect_subgraphs(const onnx::NodeProto& node, std::vector<const onnx::GraphProto*>& out) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_g()) out.push_back(&attr.g());
    for (const auto& g : attr.graphs()) out.push_back(&g);
  }
}

// Values a subgraph reads from enclosing scopes: used but not defined inside it.
void outer_scope_reads(const onnx::GraphProto& graph, std::set<std::string>& reads) {
  std::unordered_set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& node : graph.node())
    for (const auto& o : node.output()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) reads.insert(name);
  };
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input()) use(in);
    std::vector<const onnx::GraphProto*> subgraphs;
    collect_subgraphs(node, subgraphs);
    for (const auto* sub : subgraphs) {
      std::set<std::string> inner;
      outer_scope_reads(*sub, inner);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& v : graph.output()) use(v.name());
}

void name_unnamed_nodes(onnx::GraphProto& graph) {
  std::unordered_set<std::string> taken;
  for (const auto& node : graph.node()) taken.insert(node.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& node = *graph.mutable_node(i);
    if (!node.name().empty()) continue;
    std::string name = node.op_type() + "_" + std::to_string(i);
    while (taken.count(name)) name += "_";
    taken.insert(name);
    node.set_name(name);
  }
}

// Every node left after Kahn's algorithm has a predecessor that is also left, so
// walking predecessors must revisit a node: that loop is a cycle.
std::string describe_cycle(const onnx::GraphProto& graph, const std::vector<std::vector<int>>& preds,
                           const std::vector<int>& indegree) {
  int start = 0;
  while (indegree[static_cast<size_t>(start)] == 0) ++start;
  std::vector<int> walk;
  std::unordered_map<int, size_t> position;
  int current = start;
  while (!position.count(current)) {
    position[current] = walk.size();
    walk.push_back(current);
    for (int p : preds[static_cast<size_t>(current)]) {
      if (indegree[static_cast<size_t>(p)] > 0) {
        current = p;
        break;
      }
    }
  }
  std::vector<int> cycle(walk.begin() + static_cast<std::ptrdiff_t>(position[current]), walk.end());
  std::reverse(cycle.begin(), cycle.end());  // walked against the edges
  cycle.push_back(cycle.front());
  std::string text;
  for (size_t i = 0; i < cycle.size(); ++i) {
    text += (i ? " -> '" : "'") + graph.node(cycle[i]).name() + "'";
  }
  return text;
}

}  // namespace

void validate_and_sort_graph(onnx::GraphProto& graph, const std::string& label) {
  name_unnamed_nodes(graph);
  const int n = graph.node_size();

  std::unordered_map<std::string, int> producer;
  for (const auto& v : graph.input()) producer.emplace(v.name(), kGraphInput);
  std::unordered_set<std::string> initializer_names;
  for (const auto& t : graph.initializer()) {
    if (!initializer_names.insert(t.name()).second) {
      throw ModelError(label + ": initializer '" + t.name() + "' appears twice");
    }
    producer.emplace(t.name(), kGraphInput);
  }
  for (int i = 0; i < n; ++i) {
    const auto& node = graph.node(i);
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      auto [it, inserted] = producer.emplace(out, i);
      if (inserted) continue;
      if (it->second == kGraphInput) {
        throw ModelError(label + ": " + describe(node) + " output '" + out +
                         "' has the same name as a graph input or initializer");
      }
      throw ModelError(label + ": value '" + out + "' is produced twice, by " +
                       describe(graph.node(it->second)) + " and " + describe(node));
    }
  }
  for (const auto& v : graph.output()) {
    if (!producer.count(v.name())) {
      throw ModelError(label + ": graph output '" + v.name() +
                       "' is not produced by any node, nor a graph input or initializer");
    }
  }

  std::vector<std::vector<int>> preds(static_cast<size_t>(n)), succs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& node = graph.node(i);
    auto depend_on = [&](const std::string& value, bool from_subgraph) {
      auto it = producer.find(value);
      if (it == producer.end()) {
        throw ModelError(label + ": " + describe(node) + (from_subgraph ? " uses '" : " input '") + value +
                         (from_subgraph ? "' inside a subgraph, but it" : "'") +
                         " is not a graph input, an initializer or the output of any node");
      }
      if (it->second == kGraphInput) return;
      preds[static_cast<size_t>(i)].push_back(it->second);
      succs[static_cast<size_t>(it->second)].push_back(i);
    };
    for (const auto& in : node.input())
      if (!in.empty()) depend_on(in, false);
    std::vector<const onnx::GraphProto*> subgraphs;
    collect_subgraphs(node, subgraphs);
    std::set<std::string> reads;
    for (const auto* sub : subgraphs) outer_scope_reads(*sub, reads);
    for (const auto& name : reads) depend_on(name, true);
  }

  // Kahn's algorithm, always taking the lowest file index that is ready, so a graph
  // that is already sorted keeps its order.
  std::vector<int> indegree(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) indegree[static_cast<size_t>(i)] = static_cast<int>(preds[static_cast<size_t>(i)].size());
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (indegree[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int s : succs[static_cast<size_t>(i)])
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) < n) {
    throw ModelError(label + ": the graph has a cycle through nodes " + describe_cycle(graph, preds, indegree));
  }

  bool sorted = true;
  for (int i = 0; i < n; ++i) sorted = sorted && order[static_cast<size_t>(i)] == i;
  if (sorted) return;
  std::vector<onnx::NodeProto> nodes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) nodes[static_cast<size_t>(i)].Swap(graph.mutable_node(i));
  for (int i = 0; i < n; ++i) graph.mutable_node(i)->Swap(&nodes[static_cast<size_t>(order[static_cast<size_t>(i)])]);
}

}  // namespace dl::conv::detail
