// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The JNI shim between org.nodefl.Device (Java) and the nodefl C API
// (nodefl.h). NDK-compatible: it includes only <jni.h>, nodefl.h and the C
// library, compiles without exceptions or RTTI, and allocates only the
// short-lived copies of Java arrays the C API is given at create. Every
// native method maps one C call; a failed call becomes a checked
// org.nodefl.NodeflException carrying the C API's status and message.
// A device's handle is its nodefl_device pointer in a Java long.
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nodefl/nodefl.h"

#ifdef __ANDROID__
#include <android/log.h>

namespace {
// The session's log lines to logcat (tag "nodefl"): Android discards
// stderr. Only in NDK builds; the host build keeps stderr.
void LogcatLine(void* /*context*/, int32_t level, const char* line) {
  static const int kPriority[] = {ANDROID_LOG_DEBUG, ANDROID_LOG_INFO, ANDROID_LOG_WARN, ANDROID_LOG_ERROR};
  __android_log_write(kPriority[level & 3], "nodefl", line);
}
}  // namespace
#endif

namespace {

// org.nodefl.NodeflException and its (int, String) constructor, looked up
// once in JNI_OnLoad (a class loader may not find them from other threads).
jclass g_exception_class = nullptr;
jmethodID g_exception_ctor = nullptr;

nodefl_device* Handle(jlong handle) { return reinterpret_cast<nodefl_device*>(static_cast<intptr_t>(handle)); }

void Throw(JNIEnv* env, nodefl_status status, const char* message) {
  if (env->ExceptionCheck()) return;  // one already pending (e.g. OutOfMemoryError) says more
  jstring text = env->NewStringUTF(message != nullptr && message[0] != '\0' ? message : nodefl_status_text(status));
  if (text == nullptr) return;
  jobject exception = env->NewObject(g_exception_class, g_exception_ctor, static_cast<jint>(status), text);
  if (exception != nullptr) env->Throw(static_cast<jthrowable>(exception));
}

// Throws for a failed call on `device`, with its last error as the message.
void ThrowIfFailed(JNIEnv* env, nodefl_device* device, nodefl_status status) {
  if (status != NODEFL_OK) Throw(env, status, nodefl_device_last_error(device));
}

// A Java string as modified UTF-8 for the length of a call (nullptr for null).
class Utf {
 public:
  Utf(JNIEnv* env, jstring s) : env_(env), s_(s), chars_(s != nullptr ? env->GetStringUTFChars(s, nullptr) : nullptr) {}
  ~Utf() {
    if (chars_ != nullptr) env_->ReleaseStringUTFChars(s_, chars_);
  }
  Utf(const Utf&) = delete;
  Utf& operator=(const Utf&) = delete;
  const char* get() const { return chars_; }
  bool failed() const { return s_ != nullptr && chars_ == nullptr; }

 private:
  JNIEnv* env_;
  jstring s_;
  const char* chars_;
};

// A copy of a Java primitive array for the length of a call.
template <typename T>
class Copy {
 public:
  Copy() = default;
  ~Copy() {
    if (data_ != nullptr) {
      memset(data_, 0, size_ * sizeof(T));  // it may be a private key
      free(data_);
    }
  }
  Copy(const Copy&) = delete;
  Copy& operator=(const Copy&) = delete;
  // False (with OutOfMemoryError pending) when the copy cannot be made.
  bool Take(JNIEnv* env, jarray array) {
    size_ = array != nullptr ? static_cast<size_t>(env->GetArrayLength(array)) : 0;
    if (size_ == 0) return true;
    data_ = static_cast<T*>(malloc(size_ * sizeof(T)));
    if (data_ == nullptr) {
      jclass oom = env->FindClass("java/lang/OutOfMemoryError");
      if (oom != nullptr) env->ThrowNew(oom, "nodefl: no memory to copy an array");
      return false;
    }
    Fill(env, array);
    return !env->ExceptionCheck();
  }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Fill(JNIEnv* env, jarray array);
  T* data_ = nullptr;
  size_t size_ = 0;
};

template <>
void Copy<uint32_t>::Fill(JNIEnv* env, jarray array) {
  // jint and uint32_t have the same size; ids are unsigned in the C API.
  env->GetIntArrayRegion(static_cast<jintArray>(array), 0, static_cast<jsize>(size_), reinterpret_cast<jint*>(data_));
}
template <>
void Copy<float>::Fill(JNIEnv* env, jarray array) {
  env->GetFloatArrayRegion(static_cast<jfloatArray>(array), 0, static_cast<jsize>(size_), data_);
}
template <>
void Copy<uint8_t>::Fill(JNIEnv* env, jarray array) {
  env->GetByteArrayRegion(static_cast<jbyteArray>(array), 0, static_cast<jsize>(size_), reinterpret_cast<jbyte*>(data_));
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* /*reserved*/) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  jclass local = env->FindClass("org/nodefl/NodeflException");
  if (local == nullptr) return JNI_ERR;
  g_exception_class = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  g_exception_ctor = env->GetMethodID(g_exception_class, "<init>", "(ILjava/lang/String;)V");
  return g_exception_ctor != nullptr ? JNI_VERSION_1_6 : JNI_ERR;
}

JNIEXPORT jint JNICALL Java_org_nodefl_Device_nativeVersion(JNIEnv*, jclass) {
  return static_cast<jint>(nodefl_capi_version());
}

JNIEXPORT jlong JNICALL Java_org_nodefl_Device_nativeCreate(
    JNIEnv* env, jclass, jint device_id, jintArray neighbours, jint degree, jint max_neighbours, jstring job,
    jstring fedwalk_mode, jint vertices, jfloatArray features, jint label, jboolean lumos_train, jint train_classes,
    jint train_hidden, jint train_out, jdouble budget_job_epsilon, jdouble budget_lifetime_epsilon,
    jboolean unlimited_budget, jdouble lifetime_epsilon_spent, jdouble lifetime_delta_spent, jlong noise_seed,
    jstring server_name, jbyteArray ca, jbyteArray cert, jbyteArray key, jint handshake_timeout_ms,
    jint log_level) {
  Utf job_text(env, job), mode_text(env, fedwalk_mode), server_text(env, server_name);
  if (job_text.failed() || mode_text.failed() || server_text.failed()) return 0;
  Copy<uint32_t> ids;
  Copy<float> values;
  Copy<uint8_t> ca_bytes, cert_bytes, key_bytes;
  if (!ids.Take(env, neighbours) || !values.Take(env, features) || !ca_bytes.Take(env, ca) ||
      !cert_bytes.Take(env, cert) || !key_bytes.Take(env, key)) {
    return 0;
  }
  nodefl_config config;
  nodefl_config_init(&config, sizeof config);
  config.device_id = static_cast<uint32_t>(device_id);
  config.neighbours = ids.data();
  config.neighbour_count = ids.size();
  // Negative Java ints become huge unsigned values, which the C API refuses
  // with a message (vertices, degree) rather than wrapping silently to
  // something plausible.
  config.degree = static_cast<uint32_t>(degree);
  config.max_neighbours = static_cast<uint32_t>(max_neighbours);
  config.job = job_text.get();
  config.fedwalk_mode = mode_text.get();
  config.vertices = static_cast<uint32_t>(vertices);
  config.features = values.data();
  config.feature_count = values.size();
  config.label = label;
  config.lumos_train = lumos_train ? 1 : 0;
  config.train_classes = static_cast<uint32_t>(train_classes);
  config.train_hidden = static_cast<uint32_t>(train_hidden);
  config.train_out = static_cast<uint32_t>(train_out);
  config.budget_job_epsilon = budget_job_epsilon;
  config.budget_lifetime_epsilon = budget_lifetime_epsilon;
  config.unlimited_budget = unlimited_budget ? 1 : 0;
  config.lifetime_epsilon_spent = lifetime_epsilon_spent;
  config.lifetime_delta_spent = lifetime_delta_spent;
  config.noise_seed = static_cast<uint64_t>(noise_seed);
  config.server_name = server_text.get();
  config.ca = ca_bytes.data();
  config.ca_size = ca_bytes.size();
  config.cert = cert_bytes.data();
  config.cert_size = cert_bytes.size();
  config.key = key_bytes.data();
  config.key_size = key_bytes.size();
  config.handshake_timeout_ms = static_cast<uint32_t>(handshake_timeout_ms);
  config.log_level = log_level;
#ifdef __ANDROID__
  config.log_callback = LogcatLine;
#endif
  nodefl_device* device = nullptr;
  char error[256];
  const nodefl_status status = nodefl_device_create(&config, &device, error, sizeof error);
  if (status != NODEFL_OK) {
    Throw(env, status, error);
    return 0;
  }
  return static_cast<jlong>(reinterpret_cast<intptr_t>(device));
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeDestroy(JNIEnv*, jclass, jlong handle) {
  nodefl_device_destroy(Handle(handle));
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeConnect(JNIEnv* env, jclass, jlong handle, jlong now_us) {
  ThrowIfFailed(env, Handle(handle), nodefl_device_connect(Handle(handle), static_cast<uint64_t>(now_us)));
}

JNIEXPORT jint JNICALL Java_org_nodefl_Device_nativeReceive(JNIEnv* env, jclass, jlong handle, jbyteArray data,
                                                           jint offset, jint length, jlong now_us) {
  // Fed from a stack copy in chunks: no pinned Java array while MbedTLS
  // decrypts, and the pump takes at most its buffers' worth at a time.
  uint8_t chunk[4096];
  jint taken_total = 0;
  while (taken_total < length) {
    const jint n = length - taken_total < static_cast<jint>(sizeof chunk) ? length - taken_total
                                                                         : static_cast<jint>(sizeof chunk);
    env->GetByteArrayRegion(data, offset + taken_total, n, reinterpret_cast<jbyte*>(chunk));
    if (env->ExceptionCheck()) return taken_total;
    size_t taken = 0;
    const nodefl_status status =
        nodefl_device_receive(Handle(handle), chunk, static_cast<size_t>(n), static_cast<uint64_t>(now_us), &taken);
    taken_total += static_cast<jint>(taken);
    if (status != NODEFL_OK) {
      ThrowIfFailed(env, Handle(handle), status);
      return taken_total;
    }
    if (taken < static_cast<size_t>(n)) break;  // output full: the app writes, then offers the rest
  }
  return taken_total;
}

JNIEXPORT jbyteArray JNICALL Java_org_nodefl_Device_nativePendingOutput(JNIEnv* env, jclass, jlong handle) {
  const uint8_t* data = nullptr;
  size_t size = 0;
  nodefl_device_pending_output(Handle(handle), &data, &size);
  jbyteArray out = env->NewByteArray(static_cast<jsize>(size));
  if (out != nullptr && size > 0) {
    env->SetByteArrayRegion(out, 0, static_cast<jsize>(size), reinterpret_cast<const jbyte*>(data));
  }
  return out;
}

JNIEXPORT jint JNICALL Java_org_nodefl_Device_nativeCopyOutput(JNIEnv* env, jclass, jlong handle, jbyteArray buffer,
                                                              jint offset, jint length) {
  const uint8_t* data = nullptr;
  size_t size = 0;
  nodefl_device_pending_output(Handle(handle), &data, &size);
  const jint n = size < static_cast<size_t>(length) ? static_cast<jint>(size) : length;
  if (n > 0) env->SetByteArrayRegion(buffer, offset, n, reinterpret_cast<const jbyte*>(data));
  return n;
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeConsumeOutput(JNIEnv* env, jclass, jlong handle, jint count,
                                                                 jlong now_us) {
  if (count < 0) {
    Throw(env, NODEFL_ERR_ARGUMENT, "consumeOutput: a negative count");
    return;
  }
  ThrowIfFailed(env, Handle(handle),
                nodefl_device_consume_output(Handle(handle), static_cast<size_t>(count), static_cast<uint64_t>(now_us)));
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeTick(JNIEnv* env, jclass, jlong handle, jlong now_us) {
  ThrowIfFailed(env, Handle(handle), nodefl_device_tick(Handle(handle), static_cast<uint64_t>(now_us)));
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeCloseSession(JNIEnv* env, jclass, jlong handle, jstring reason) {
  Utf text(env, reason);
  if (text.failed()) return;
  ThrowIfFailed(env, Handle(handle), nodefl_device_close(Handle(handle), text.get()));
}

JNIEXPORT jint JNICALL Java_org_nodefl_Device_nativeState(JNIEnv*, jclass, jlong handle) {
  return static_cast<jint>(nodefl_device_state(Handle(handle)));
}

JNIEXPORT jboolean JNICALL Java_org_nodefl_Device_nativeSessionEnded(JNIEnv*, jclass, jlong handle) {
  return nodefl_device_session_ended(Handle(handle)) != 0 ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jboolean JNICALL Java_org_nodefl_Device_nativeFinished(JNIEnv*, jclass, jlong handle) {
  return nodefl_device_finished(Handle(handle)) != 0 ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeLedger(JNIEnv* env, jclass, jlong handle, jdoubleArray out) {
  nodefl_ledger ledger;
  memset(&ledger, 0, sizeof ledger);
  ledger.struct_size = sizeof ledger;
  nodefl_device_ledger(Handle(handle), &ledger);
  // The order org.nodefl.Ledger reads them in.
  const jdouble values[6] = {ledger.epsilon,          ledger.job_epsilon,    ledger.job_delta,
                             ledger.lifetime_epsilon, ledger.lifetime_delta, static_cast<jdouble>(ledger.unbounded)};
  env->SetDoubleArrayRegion(out, 0, 6, values);
}

JNIEXPORT void JNICALL Java_org_nodefl_Device_nativeStats(JNIEnv* env, jclass, jlong handle, jlongArray out) {
  nodefl_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  nodefl_device_stats(Handle(handle), &s);
  // kStatsFields: the order org.nodefl.DeviceStats reads them in.
  const jlong values[20] = {
      s.connections,  s.handshakes,    s.resumed,         static_cast<jlong>(s.bytes_received),
      static_cast<jlong>(s.bytes_sent), static_cast<jlong>(s.frames_in), static_cast<jlong>(s.frames_out),
      static_cast<jlong>(s.sends_resent), static_cast<jlong>(s.arena_bytes), s.echo_sent, s.echo_received,
      s.hct_reports,  s.histogram_releases, s.walks_started, s.walks_forwarded, s.walks_finished, s.walks_dropped,
      s.compare_done, s.compare_aborted, s.train_epochs};
  env->SetLongArrayRegion(out, 0, 20, values);
}

JNIEXPORT jstring JNICALL Java_org_nodefl_Device_nativeLastError(JNIEnv* env, jclass, jlong handle) {
  return env->NewStringUTF(nodefl_device_last_error(Handle(handle)));
}

}  // extern "C"
