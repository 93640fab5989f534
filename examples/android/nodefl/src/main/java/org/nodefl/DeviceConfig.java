// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

import java.util.Arrays;

/**
 * What a {@link Device} is created from (the C API's nodefl_config),
 * immutable; build one with {@link #builder}. The C API checks it when the
 * device is created and names the field it refuses. Defaults: job
 * neighbour-echo, strict FedWalk, budget 16 per job and 256 per lifetime,
 * handshake timeout 30 s, session log from warnings (to stderr).
 */
public final class DeviceConfig {
  final int deviceId;
  final int[] neighbours;
  final int degree;
  final int maxNeighbours;
  final String job;
  final String fedwalkMode;
  final int vertices;
  final float[] features;
  final int label;
  final boolean lumosTrain;
  final int trainClasses;
  final int trainHidden;
  final int trainOut;
  final double budgetJobEpsilon;
  final double budgetLifetimeEpsilon;
  final boolean unlimitedBudget;
  final double lifetimeEpsilonSpent;
  final double lifetimeDeltaSpent;
  final long noiseSeed;
  final String serverName;
  final byte[] ca;
  final byte[] cert;
  final byte[] key;
  final int handshakeTimeoutMs;
  final int logLevel;

  private DeviceConfig(Builder b) {
    deviceId = b.deviceId;
    neighbours = b.neighbours.clone();
    degree = b.degree;
    maxNeighbours = b.maxNeighbours;
    job = b.job;
    fedwalkMode = b.fedwalkMode;
    vertices = b.vertices;
    features = b.features.clone();
    label = b.label;
    lumosTrain = b.lumosTrain;
    trainClasses = b.trainClasses;
    trainHidden = b.trainHidden;
    trainOut = b.trainOut;
    budgetJobEpsilon = b.budgetJobEpsilon;
    budgetLifetimeEpsilon = b.budgetLifetimeEpsilon;
    unlimitedBudget = b.unlimitedBudget;
    lifetimeEpsilonSpent = b.lifetimeEpsilonSpent;
    lifetimeDeltaSpent = b.lifetimeDeltaSpent;
    noiseSeed = b.noiseSeed;
    serverName = b.serverName;
    ca = b.ca.clone();
    cert = b.cert.clone();
    key = b.key.clone();
    handshakeTimeoutMs = b.handshakeTimeoutMs;
    logLevel = b.logLevel;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Overwrites the copy of the private key this config holds (the device keeps its own inside MbedTLS). */
  public void wipeKey() {
    Arrays.fill(key, (byte) 0);
  }

  public static final class Builder {
    private int deviceId;
    private int[] neighbours = new int[0];
    private int degree;
    private int maxNeighbours;
    private String job = "neighbour-echo";
    private String fedwalkMode = "strict";
    private int vertices;
    private float[] features = new float[0];
    private int label = -1;
    private boolean lumosTrain;
    private int trainClasses;
    private int trainHidden = 16;
    private int trainOut = 16;
    private double budgetJobEpsilon = 16.0;
    private double budgetLifetimeEpsilon = 256.0;
    private boolean unlimitedBudget;
    private double lifetimeEpsilonSpent;
    private double lifetimeDeltaSpent;
    private long noiseSeed;
    private String serverName;
    private byte[] ca = new byte[0];
    private byte[] cert = new byte[0];
    private byte[] key = new byte[0];
    private int handshakeTimeoutMs = 30000;
    private int logLevel = 2;

    private Builder() {}

    /** This node's id: its certificate's "device-&lt;id&gt;" (unsigned 32 bits). */
    public Builder deviceId(int id) {
      deviceId = id;
      return this;
    }

    /** The node's neighbour ids (any order, no duplicates, not its own id, at least one). */
    public Builder neighbours(int... ids) {
      neighbours = ids.clone();
      return this;
    }

    /** The real degree when the neighbours are a capped subset (0: their count). */
    public Builder degree(int d) {
      degree = d;
      return this;
    }

    /** FedWalk jobs: the public neighbour cap the server uses (0: none). */
    public Builder maxNeighbours(int cap) {
      maxNeighbours = cap;
      return this;
    }

    /** neighbour-echo, fedwalk-hct, fedwalk, fedwalk-histograms, secure-compare, lumos-trees or secure-aggregate. */
    public Builder job(String name) {
      job = name;
      return this;
    }

    /** strict or paper: the server's fedwalk_mode. */
    public Builder fedwalkMode(String mode) {
      fedwalkMode = mode;
      return this;
    }

    /** FedWalk jobs (required): the most vertices the job's graph may have. */
    public Builder vertices(int n) {
      vertices = n;
      return this;
    }

    /** Lumos training: the node's features and class (-1: none). */
    public Builder features(float[] values, int nodeLabel) {
      features = values.clone();
      label = nodeLabel;
      return this;
    }

    /** Lumos training (job lumos-trees): serve the training role with room for these widths. */
    public Builder lumosTrain(int classes, int hidden, int out) {
      lumosTrain = true;
      trainClasses = classes;
      trainHidden = hidden;
      trainOut = out;
      return this;
    }

    /** The privacy budget the device enforces whatever the server asks. */
    public Builder budget(double jobEpsilon, double lifetimeEpsilon) {
      budgetJobEpsilon = jobEpsilon;
      budgetLifetimeEpsilon = lifetimeEpsilon;
      unlimitedBudget = false;
      return this;
    }

    /** No limits and exact releases allowed (the papers' modes). */
    public Builder unlimitedBudget() {
      unlimitedBudget = true;
      return this;
    }

    /** What earlier lives of the device spent ({@link Ledger#lifetimeEpsilon}, as persisted). */
    public Builder lifetimeSpent(double epsilon, double delta) {
      lifetimeEpsilonSpent = epsilon;
      lifetimeDeltaSpent = delta;
      return this;
    }

    /** Experiments only: seeds the noise so that runs repeat (the noise is then known). */
    public Builder noiseSeed(long seed) {
      noiseSeed = seed;
      return this;
    }

    /** The server's name as its certificate states it. */
    public Builder serverName(String name) {
      serverName = name;
      return this;
    }

    /** The deployment CA, this device's certificate and its private key (PEM or DER). */
    public Builder credentials(byte[] caCertificate, byte[] certificate, byte[] privateKey) {
      ca = caCertificate.clone();
      cert = certificate.clone();
      key = privateKey.clone();
      return this;
    }

    /** Give up on a TLS handshake after this long (0: never). */
    public Builder handshakeTimeoutMs(int ms) {
      handshakeTimeoutMs = ms;
      return this;
    }

    /** Session log lines to stderr from this level: 0 debug, 1 info, 2 warning, 3 error. */
    public Builder logLevel(int level) {
      logLevel = level;
      return this;
    }

    public DeviceConfig build() {
      return new DeviceConfig(this);
    }
  }
}
