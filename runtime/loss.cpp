// Loss factory and the shape checks shared by every loss.
#include "runtime/loss.h"

#include <cmath>

#include "converter/errors.h"
#include "runtime/loss_impl.h"

namespace dl::rt {

namespace loss_detail {

namespace {

// Rank after dropping trailing 1-dims, so [B] and [B, 1] compare equal.
size_t effective_rank(const Shape& s) {
  size_t r = s.size();
  while (r > 0 && s[r - 1] == 1) --r;
  return r;
}

bool same_up_to_trailing_ones(const Shape& a, const Shape& b) {
  const size_t ra = effective_rank(a), rb = effective_rank(b);
  if (ra != rb) return false;
  for (size_t i = 0; i < ra; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

void check_pred_and_grad(const std::string& loss, const Tensor& pred, const Tensor* grad) {
  if (pred.dtype() != DType::kFloat32 || !pred.allocated())
    throw ShapeError("loss " + loss + ": the prediction must be an allocated float32 tensor");
  if (grad != nullptr &&
      (grad->dtype() != DType::kFloat32 || grad->numel() != pred.numel() || !grad->allocated()))
    throw ShapeError("loss " + loss + ": the gradient buffer " + shape_str(grad->shape()) +
                     " does not match the prediction " + shape_str(pred.shape()));
}

}  // namespace

Layout layout_of(const Tensor& pred) {
  Layout l;
  l.width = pred.rank() >= 2 ? pred.dim(-1) : 1;
  l.rows = l.width > 0 ? pred.numel() / l.width : 0;
  return l;
}

Layout check_same_shape(const std::string& loss, const Tensor& pred, const Tensor& target, const Tensor* grad) {
  check_pred_and_grad(loss, pred, grad);
  if (!target.allocated() || target.numel() != pred.numel() || !same_up_to_trailing_ones(pred.shape(), target.shape()))
    throw ShapeError("loss " + loss + ": targets " + shape_str(target.shape()) + " do not match the predictions " +
                     shape_str(pred.shape()));
  return layout_of(pred);
}

Layout check_sparse_shape(const std::string& loss, const Tensor& pred, const Tensor& target, const Tensor* grad) {
  check_pred_and_grad(loss, pred, grad);
  const Layout l = layout_of(pred);
  const bool batch_ok = pred.rank() == 0 || target.rank() == 0 || target.dim(0) == pred.dim(0);
  if (!target.allocated() || target.numel() != l.rows || !batch_ok)
    throw ShapeError("loss " + loss + ": expects one class id per prediction row, got targets " +
                     shape_str(target.shape()) + " for predictions " + shape_str(pred.shape()));
  return l;
}

int64_t class_id(const std::string& loss, const Tensor& target, int64_t r, int64_t width) {
  (void)loss;
  const double v = target.at(r);
  // Invalid ids are a fault the analysis reports (contract: labels), not an input error;
  // the dataset marks them -1 and such rows contribute neither loss nor gradient.
  if (!(v >= 0.0 && v < double(width)) || v != std::floor(v)) return -1;
  return static_cast<int64_t>(v);
}

}  // namespace loss_detail

const char* valid_loss_names() {
  return "mse, mae, huber, hinge, binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy";
}

std::unique_ptr<Loss> make_loss(const std::string& name, bool from_logits) {
  std::string canonical = name;
  if (name == "mean_squared_error") canonical = "mse";
  if (name == "mean_absolute_error") canonical = "mae";
  if (canonical == "mse" || canonical == "mae" || canonical == "huber" || canonical == "hinge" ||
      canonical == "binary_crossentropy")
    return loss_detail::make_elementwise_loss(canonical, from_logits);
  if (canonical == "categorical_crossentropy" || canonical == "sparse_categorical_crossentropy")
    return loss_detail::make_categorical_loss(canonical, from_logits);
  throw ConfigError("--loss: unknown loss '" + name + "' (valid: " + valid_loss_names() + ")");
}

}  // namespace dl::rt
