/* The mbk trajectory viewer: the script of the page `mbk run --html` writes
 * (docs/viewer.md). It reads the trajectory from the JSON element #mbk-data
 * and draws it with three.js (embedded in the same page), with the
 * coordinate and energy plots beside the scene. window.mbkViewer is a small
 * hook for tests and scripts (seek, pause, poses read back from the scene). */
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('mbk-data').textContent);
  var nb = D.bodies.length, nf = D.frames, T = D.t;
  var t0 = nf ? T[0] : 0, t1 = nf ? T[nf - 1] : 0;
  var poses = decodeFloats(D.poses);  /* nf x nb x (x y z qw qx qy qz) */
  var PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
                 '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

  function $(id) { return document.getElementById(id); }
  function decodeFloats(b64) {
    var bin = atob(b64 || ''), n = bin.length, u8 = new Uint8Array(n);
    for (var i = 0; i < n; ++i) u8[i] = bin.charCodeAt(i);
    return new Float32Array(u8.buffer, 0, n >> 2);
  }
  function fmt(v, d) {
    if (v === null || !isFinite(v)) return '-';
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(d === undefined ? 3 : d);
    return (+v.toPrecision(d === undefined ? 4 : d + 1)).toString();
  }

  /* ---- words on the page ---------------------------------------------------------- */
  document.title = 'mbk: ' + D.spec;
  $('title').textContent = 'mbk ' + D.command + ' ' + D.spec;
  $('subtitle').textContent = D.title;
  var status = [];
  if (nb <= 1) status.push('This model has no bodies (only Ground): there is nothing to move.');
  if (D.stopped_early)
    status.push('The run stopped early: it reached t = ' + fmt(t1, 6) + ' s of the ' + fmt(D.t_final, 6) +
                ' s asked for' + (D.why ? ' (' + D.why + ')' : '') + '. The page shows what was simulated.');
  if (nf === 0) status.push('The run has no samples.');
  $('status').textContent = status.join(' ');
  var notes = D.notes || '';
  if (nf < D.samples)
    notes += 'Showing ' + nf + ' of the ' + D.samples + ' samples: the page keeps at most ' +
             D.pose_budget.toLocaleString('en') + ' body poses (frames \u00d7 moving bodies) and ' +
             D.max_frames + ' frames; poses between frames are interpolated. ';
  $('notes').textContent = notes;
  var moving = Math.max(0, nb - 1);
  $('facts').textContent = moving + ' bod' + (moving === 1 ? 'y' : 'ies') + ' + Ground, nq = ' + D.nq +
    ', nu = ' + D.nu + '; ' + nf + ' frame' + (nf === 1 ? '' : 's') + ' from t = ' + fmt(t0) + ' to ' + fmt(t1) +
    ' s; integrator ' + D.integrator + '; mbk ' + D.mbk + '.';

  /* ---- time and playback ------------------------------------------------------------ */
  var time = t0, playing = false, speed = 1, last = null, dirty = true;
  var slider = $('time-slider');
  slider.min = t0;
  slider.max = t1 > t0 ? t1 : t0 + 1;
  slider.disabled = !(t1 > t0);

  function frameAt(t) { /* k with T[k] <= t < T[k+1] (clamped), and the fraction */
    if (nf <= 1 || t <= T[0]) return [0, 0];
    if (t >= T[nf - 1]) return [nf - 1, 0];
    var lo = 0, hi = nf - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (T[mid] <= t) lo = mid; else hi = mid; }
    var span = T[hi] - T[lo];
    return [lo, span > 0 ? (t - T[lo]) / span : 0];
  }

  /* the pose of every body at time t, into out (nb x 7) */
  var cur = new Float64Array(nb * 7);
  function posesAt(t, out) {
    if (!nf) { for (var b = 0; b < nb; ++b) { out.set([0, 0, 0, 1, 0, 0, 0], 7 * b); } return; }
    var fa = frameAt(t), k = fa[0], a = fa[1], i0 = k * nb * 7, i1 = Math.min(k + 1, nf - 1) * nb * 7;
    for (var j = 0; j < nb * 7; j += 7) {
      var p = i0 + j, q = i1 + j;
      if (a === 0) { for (var c = 0; c < 7; ++c) out[j + c] = poses[p + c]; continue; }
      for (c = 0; c < 3; ++c) out[j + c] = poses[p + c] + a * (poses[q + c] - poses[p + c]);
      var dot = 0;
      for (c = 3; c < 7; ++c) dot += poses[p + c] * poses[q + c];
      var s = dot < 0 ? -1 : 1, n = 0;
      for (c = 3; c < 7; ++c) { out[j + c] = poses[p + c] + a * (s * poses[q + c] - poses[p + c]); n += out[j + c] * out[j + c]; }
      n = Math.sqrt(n) || 1;
      for (c = 3; c < 7; ++c) out[j + c] /= n;
    }
  }

  /* ---- the 3-D scene ------------------------------------------------------------------ */
  var canvas = $('scene'), wrap = $('scene-wrap');
  var renderer = null, scene, camera, controls, grid, frameLines, connLines, gridInfo = '';
  var groups = [];     /* instanced meshes of shapes: {mesh, items: [{body, local}]} */
  var contactGroup = null;
  var up = new THREE.Vector3(0, 0, 1);
  var g = D.gravity;
  if (g && (g[0] || g[1] || g[2])) up.set(-g[0], -g[1], -g[2]).normalize();
  var bounds = new THREE.Box3(), radius = 1, axisLength = 0.1;

  function shapeLocal(s) {
    var m = new THREE.Matrix4(), sc = new THREE.Vector3(s.size[0], s.size[1], s.size[2]);
    m.compose(new THREE.Vector3(s.pos[0], s.pos[1], s.pos[2]),
              new THREE.Quaternion(s.quat[1], s.quat[2], s.quat[3], s.quat[0]), sc);
    return m;
  }
  function poseMatrix(arr, b, m) {
    var j = 7 * b;
    return m.compose(new THREE.Vector3(arr[j], arr[j + 1], arr[j + 2]),
                     new THREE.Quaternion(arr[j + 4], arr[j + 5], arr[j + 6], arr[j + 3]),
                     new THREE.Vector3(1, 1, 1));
  }

  function computeBounds() {
    var ext = 0;
    D.shapes.forEach(function (s) {
      var r = Math.sqrt(s.size[0] * s.size[0] + s.size[1] * s.size[1] + s.size[2] * s.size[2]);
      r = (s.type === 'box' ? 0.5 * r : s.type === 'sphere' ? s.size[0] : 0.5 * r) +
          Math.sqrt(s.pos[0] * s.pos[0] + s.pos[1] * s.pos[1] + s.pos[2] * s.pos[2]);
      ext = Math.max(ext, r);
    });
    var v = new THREE.Vector3();
    for (var k = 0; k < Math.max(nf, 1); ++k)
      for (var b = 0; b < nb; ++b) {
        var j = (k * nb + b) * 7;
        if (nf) v.set(poses[j], poses[j + 1], poses[j + 2]); else v.set(0, 0, 0);
        bounds.expandByPoint(v);
      }
    if (bounds.isEmpty()) bounds.set(new THREE.Vector3(-1, -1, -1), new THREE.Vector3(1, 1, 1));
    /* the radius of the sphere around the box's centre holding every body origin, plus the
       largest reach of a shape from its body's origin */
    var c = bounds.getCenter(new THREE.Vector3()), r2 = 0;
    for (k = 0; k < nf; ++k)
      for (b = 0; b < nb; ++b) {
        j = (k * nb + b) * 7;
        v.set(poses[j], poses[j + 1], poses[j + 2]);
        r2 = Math.max(r2, v.distanceToSquared(c));
      }
    ext = Math.max(ext, 0.05);
    bounds.expandByScalar(ext);
    radius = Math.max(Math.sqrt(r2) + ext, 0.1);
    /* joint frame axes: about half a typical body (the median shape size), and no more
       than a tenth of the scene */
    var sizes = D.shapes.map(function (s) {
      return s.type === 'box' ? Math.max(s.size[0], s.size[1], s.size[2])
                              : Math.max(2 * s.size[0], s.type === 'cylinder' ? s.size[2] : 0);
    }).sort(function (a, b) { return a - b; });
    var typical = sizes.length ? sizes[sizes.length >> 1] : radius / 5;
    axisLength = Math.min(0.6 * typical, 0.12 * radius);
  }

  function niceStep(x) {
    var e = Math.pow(10, Math.floor(Math.log10(x))), r = x / e;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * e;
  }

  function buildScene() {
    try {
      renderer = new THREE.WebGLRenderer({ canvas: canvas, antialias: true, preserveDrawingBuffer: true });
    } catch (e) {
      renderer = null;
    }
    if (!renderer || !renderer.getContext()) {
      renderer = null;
      var m = $('nogl');
      m.style.display = 'flex';
      m.textContent = 'WebGL is not available in this browser, so the 3-D view is off. The plots and the ' +
                      'time controls still work.';
      return;
    }
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    renderer.setClearColor(0xeef1f5, 1);
    scene = new THREE.Scene();
    camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1e6);
    camera.up.copy(up);
    scene.add(camera);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x667080, 0.75));
    var sun = new THREE.DirectionalLight(0xffffff, 0.55);
    sun.position.set(0.4, 0.8, 1);
    camera.add(sun);

    /* bodies: one instanced mesh per (shape type, colour) */
    var geoms = {
      box: new THREE.BoxBufferGeometry(1, 1, 1),
      cylinder: new THREE.CylinderBufferGeometry(1, 1, 1, 28).rotateX(Math.PI / 2),
      sphere: new THREE.SphereBufferGeometry(1, 24, 16)
    };
    var byKey = {};
    D.shapes.forEach(function (s) {
      var key = s.type + '|' + s.color.join(',');
      if (!byKey[key]) byKey[key] = { type: s.type, color: s.color, items: [] };
      byKey[key].items.push({ body: s.body, local: shapeLocal(s) });
    });
    Object.keys(byKey).forEach(function (key) {
      var gr = byKey[key], c = gr.color;
      var mat = new THREE.MeshPhongMaterial({ color: new THREE.Color(c[0], c[1], c[2]), shininess: 25,
                                              transparent: c[3] < 1, opacity: c[3] });
      /* a geometry of its own: three.js r111 keeps the vertex bindings of the last object
         drawn with the same geometry and program, instance matrices included */
      var mesh = new THREE.InstancedMesh(geoms[gr.type].clone(), mat, gr.items.length);
      if (mesh.instanceMatrix.setUsage) mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
      mesh.frustumCulled = false;  /* the instances move far from the geometry's own bounds */
      scene.add(mesh);
      groups.push({ mesh: mesh, items: gr.items, type: gr.type });
    });

    /* contact spheres (attached to bodies) and the ground planes they touch */
    if (D.contacts.length) {
      var cm = new THREE.MeshPhongMaterial({ color: 0xffc300, transparent: true, opacity: 0.6 });
      contactGroup = new THREE.InstancedMesh(geoms.sphere.clone(), cm, D.contacts.length);
      contactGroup.frustumCulled = false;
      scene.add(contactGroup);
      var heights = {};
      D.contacts.forEach(function (c) { heights[c.height] = true; });
      Object.keys(heights).forEach(function (h) {
        var size = 4 * radius;
        var plane = new THREE.Mesh(new THREE.PlaneBufferGeometry(size, size),
          new THREE.MeshPhongMaterial({ color: 0x6f8f6f, transparent: true, opacity: 0.35,
                                        side: THREE.DoubleSide, depthWrite: false }));
        var c = bounds.getCenter(new THREE.Vector3());
        plane.position.set(c.x, c.y, +h);  /* the half-space z <= height of Ground */
        scene.add(plane);
      });
    }

    /* constraint connections */
    if (D.lines.length) {
      var lg = new THREE.BufferGeometry();
      lg.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6 * D.lines.length), 3));
      connLines = new THREE.LineSegments(lg, new THREE.LineBasicMaterial({ color: 0xd6279c }));
      connLines.frustumCulled = false;
      scene.add(connLines);
    }

    /* joint (body) frames: x red, y green, z blue at each body's origin */
    var fg = new THREE.BufferGeometry(), col = new Float32Array(18 * nb);
    for (var b = 0; b < nb; ++b)
      for (var a = 0; a < 3; ++a)
        for (var e2 = 0; e2 < 2; ++e2) col.set(a === 0 ? [0.9, 0.1, 0.1] : a === 1 ? [0.1, 0.7, 0.1] : [0.1, 0.2, 0.95],
                                               18 * b + 6 * a + 3 * e2);
    fg.setAttribute('position', new THREE.BufferAttribute(new Float32Array(18 * nb), 3));
    fg.setAttribute('color', new THREE.BufferAttribute(col, 3));
    frameLines = new THREE.LineSegments(fg, new THREE.LineBasicMaterial({ vertexColors: THREE.VertexColors,
                                                                           depthTest: false }));
    frameLines.renderOrder = 2;
    frameLines.frustumCulled = false;
    frameLines.visible = $('show-frames').checked;
    scene.add(frameLines);

    /* the ground grid: under the whole motion (or at the contact plane), across "up" */
    var size = bounds.getSize(new THREE.Vector3()).length();
    var step = niceStep(size / 8), half = Math.ceil(0.75 * size / step) * step;
    grid = new THREE.GridHelper(2 * half, Math.round(2 * half / step), 0x8a93a6, 0xc9ced8);
    /* across "up", or in the contact ground z = height whatever the gravity */
    var normal = D.contacts.length ? new THREE.Vector3(0, 0, 1) : up;
    grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), normal);
    var lowest = Infinity;
    [bounds.min, bounds.max].forEach(function (p0) {
      [bounds.min.x, bounds.max.x].forEach(function (x) {
        [bounds.min.y, bounds.max.y].forEach(function (y) {
          [bounds.min.z, bounds.max.z].forEach(function (z) {
            lowest = Math.min(lowest, x * up.x + y * up.y + z * up.z);
          });
        });
      });
      void p0;
    });
    var level = D.contacts.length ? D.contacts[0].height : Math.floor(Math.min(0, lowest) / step) * step;
    var ctr = bounds.getCenter(new THREE.Vector3());
    var along = ctr.clone().sub(up.clone().multiplyScalar(ctr.dot(up)));
    if (D.contacts.length) along.set(ctr.x, ctr.y, 0);
    grid.position.copy(along).add(D.contacts.length ? new THREE.Vector3(0, 0, level) : up.clone().multiplyScalar(level));
    grid.visible = $('show-grid').checked;
    scene.add(grid);
    var axisName = Math.abs(normal.z) > 0.999 ? 'z' : Math.abs(normal.y) > 0.999 ? 'y' :
                   Math.abs(normal.x) > 0.999 ? 'x' : 'height';
    gridInfo = 'grid: ' + fmt(step) + ' m squares at ' + axisName + ' = ' + fmt(level) + ' m' +
               (D.contacts.length ? ' (the contact ground)' : '');

    controls = new THREE.OrbitControls(camera, canvas);
    controls.enableDamping = false;
    controls.screenSpacePanning = true;
    controls.enableKeys = false; /* the arrow keys step frames (the page's own keys), not the camera */
    controls.addEventListener('change', function () { dirty = true; });
    fit();
  }

  function fit() {
    if (!renderer) return;
    var c = bounds.getCenter(new THREE.Vector3());
    var a = Math.abs(up.x) < 0.9 ? new THREE.Vector3(1, 0, 0) : new THREE.Vector3(0, 1, 0);
    var h1 = a.sub(up.clone().multiplyScalar(a.dot(up))).normalize();
    var h2 = new THREE.Vector3().crossVectors(up, h1);
    var dir = h1.multiplyScalar(0.55).add(h2.multiplyScalar(-0.75)).add(up.clone().multiplyScalar(0.42)).normalize();
    var fov = camera.fov * Math.PI / 180, aspect = Math.max(camera.aspect, 0.2);
    var dist = radius / Math.sin(Math.min(fov, 2 * Math.atan(Math.tan(fov / 2) * aspect)) / 2) * 1.05;
    camera.position.copy(c).add(dir.multiplyScalar(dist));
    camera.near = Math.max(dist / 1000, 1e-4);
    camera.far = dist * 100;
    camera.updateProjectionMatrix();
    controls.target.copy(c);
    controls.update();
    dirty = true;
  }

  var tmpM = new THREE.Matrix4(), bodyM = [];
  for (var bi = 0; bi < nb; ++bi) bodyM.push(new THREE.Matrix4());
  function updateScene() {
    if (!renderer) return;
    posesAt(time, cur);
    for (var b = 0; b < nb; ++b) poseMatrix(cur, b, bodyM[b]);
    groups.forEach(function (gr) {
      for (var i = 0; i < gr.items.length; ++i) {
        var it = gr.items[i];
        tmpM.multiplyMatrices(bodyM[it.body], it.local);
        gr.mesh.setMatrixAt(i, tmpM);
      }
      gr.mesh.instanceMatrix.needsUpdate = true;
    });
    if (contactGroup) {
      D.contacts.forEach(function (c, i) {
        var l = new THREE.Matrix4().compose(new THREE.Vector3(c.center[0], c.center[1], c.center[2]),
                                            new THREE.Quaternion(), new THREE.Vector3(c.radius, c.radius, c.radius));
        tmpM.multiplyMatrices(bodyM[c.body], l);
        contactGroup.setMatrixAt(i, tmpM);
      });
      contactGroup.instanceMatrix.needsUpdate = true;
    }
    var v = new THREE.Vector3();
    if (connLines) {
      var lp = connLines.geometry.attributes.position;
      D.lines.forEach(function (l, i) {
        v.set(l.p1[0], l.p1[1], l.p1[2]).applyMatrix4(bodyM[l.b1]);
        lp.setXYZ(2 * i, v.x, v.y, v.z);
        v.set(l.p2[0], l.p2[1], l.p2[2]).applyMatrix4(bodyM[l.b2]);
        lp.setXYZ(2 * i + 1, v.x, v.y, v.z);
      });
      lp.needsUpdate = true;
    }
    if (frameLines.visible) {
      var fp = frameLines.geometry.attributes.position, L = axisLength;
      var o = new THREE.Vector3(), axes = [new THREE.Vector3(L, 0, 0), new THREE.Vector3(0, L, 0), new THREE.Vector3(0, 0, L)];
      for (b = 0; b < nb; ++b) {
        o.set(0, 0, 0).applyMatrix4(bodyM[b]);
        for (var a = 0; a < 3; ++a) {
          v.copy(axes[a]).applyMatrix4(bodyM[b]);
          fp.setXYZ(6 * b + 2 * a, o.x, o.y, o.z);
          fp.setXYZ(6 * b + 2 * a + 1, v.x, v.y, v.z);
        }
      }
      fp.needsUpdate = true;
    }
  }

  function resize() {
    if (!renderer) return;
    var w = Math.max(wrap.clientWidth, 1), h = Math.max(wrap.clientHeight, 1);
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    dirty = true;
  }

  function render() {
    if (!renderer) return;
    updateScene();
    renderer.render(scene, camera);
  }

  /* ---- plots ------------------------------------------------------------------------ */
  var plots = [];
  function makePlot(id, keysId, series, emptyText) {
    var cv = $(id), p = { cv: cv, series: series, base: document.createElement('canvas'), empty: emptyText };
    var keys = $(keysId);
    series.forEach(function (s) {
      var k = document.createElement('span');
      k.style.setProperty('--c', s.color);
      k.textContent = s.name;
      keys.appendChild(k);
    });
    var drag = false;
    function toTime(ev) {
      var r = cv.getBoundingClientRect(), x = (ev.clientX - r.left) / r.width * p.W;
      return p.tA + (x - p.x0) / p.w * (p.tB - p.tA);
    }
    cv.addEventListener('pointerdown', function (ev) {
      drag = true;
      cv.setPointerCapture(ev.pointerId);
      pause();
      seekTo(toTime(ev));
    });
    cv.addEventListener('pointermove', function (ev) { if (drag) seekTo(toTime(ev)); });
    cv.addEventListener('pointerup', function () { drag = false; });
    cv.addEventListener('pointercancel', function () { drag = false; });
    plots.push(p);
    return p;
  }

  function drawPlotBase(p) {
    var dpr = window.devicePixelRatio || 1, W = Math.max(p.cv.clientWidth, 50), H = Math.max(p.cv.clientHeight, 50);
    p.cv.width = Math.round(W * dpr);
    p.cv.height = Math.round(H * dpr);
    p.base.width = p.cv.width;
    p.base.height = p.cv.height;
    p.W = W, p.H = H, p.x0 = 52, p.y0 = 8, p.w = W - 60, p.h = H - 30;
    p.tA = t0, p.tB = t1 > t0 ? t1 : t0 + 1;
    var ctx = p.base.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    var lo = Infinity, hi = -Infinity;
    p.series.forEach(function (s) {
      s.v.forEach(function (x) { if (x !== null && isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); } });
    });
    ctx.font = '10px system-ui, sans-serif';
    ctx.fillStyle = '#5b6475';
    if (!(hi >= lo)) {
      ctx.textAlign = 'center';
      ctx.fillText(p.empty, W / 2, H / 2);
      return;
    }
    if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { var d = Math.max(1e-9, 1e-6 * Math.abs(hi)); lo -= d; hi += d; }
    var pad = 0.06 * (hi - lo);
    lo -= pad, hi += pad;
    function X(t) { return p.x0 + (t - p.tA) / (p.tB - p.tA) * p.w; }
    function Y(v) { return p.y0 + p.h - (v - lo) / (hi - lo) * p.h; }
    ctx.strokeStyle = '#eceef2';
    ctx.lineWidth = 1;
    var st = niceStep((p.tB - p.tA) / 6);
    ctx.textAlign = 'center';
    for (var t = Math.ceil(p.tA / st) * st; t <= p.tB + 1e-9 * st; t += st) {
      ctx.beginPath(); ctx.moveTo(X(t), p.y0); ctx.lineTo(X(t), p.y0 + p.h); ctx.stroke();
      ctx.fillText(fmt(Math.abs(t) < 1e-12 * st ? 0 : t), X(t), p.y0 + p.h + 12);
    }
    ctx.fillText('time (s)', p.x0 + p.w / 2, p.y0 + p.h + 22);
    var sv = niceStep((hi - lo) / 5);
    ctx.textAlign = 'right';
    for (var v = Math.ceil(lo / sv) * sv; v <= hi; v += sv) {
      ctx.beginPath(); ctx.moveTo(p.x0, Y(v)); ctx.lineTo(p.x0 + p.w, Y(v)); ctx.stroke();
      ctx.fillText(fmt(Math.abs(v) < 1e-9 * sv ? 0 : v), p.x0 - 4, Y(v) + 3);
    }
    ctx.strokeStyle = '#9aa1ad';
    ctx.strokeRect(p.x0, p.y0, p.w, p.h);
    p.series.forEach(function (s) {
      ctx.strokeStyle = s.color;
      ctx.lineWidth = 1.4;
      ctx.beginPath();
      var pen = false;
      for (var i = 0; i < nf; ++i) {
        var x = s.v[i];
        if (x === null || !isFinite(x)) { pen = false; continue; }
        if (pen) ctx.lineTo(X(T[i]), Y(x)); else ctx.moveTo(X(T[i]), Y(x));
        pen = true;
      }
      ctx.stroke();
    });
  }

  function drawPlot(p) {
    var ctx = p.cv.getContext('2d'), dpr = window.devicePixelRatio || 1;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(p.base, 0, 0);
    if (!(p.w > 0)) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    var x = p.x0 + (time - p.tA) / (p.tB - p.tA) * p.w;
    ctx.strokeStyle = '#222';
    ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(x, p.y0); ctx.lineTo(x, p.y0 + p.h); ctx.stroke();
  }

  var qSeries = D.q_names.map(function (name, i) { return { name: name, v: D.q[i], color: PALETTE[i % 10] }; });
  var E = D.kinetic.map(function (k, i) { return k === null || D.potential[i] === null ? null : k + D.potential[i]; });
  makePlot('plot-q', 'keys-q', qSeries, D.nq ? 'no samples' : 'this model has no coordinates');
  makePlot('plot-e', 'keys-e', [
    { name: 'total E', v: E, color: '#d62728' },
    { name: 'kinetic', v: D.kinetic, color: '#1f77b4' },
    { name: 'potential', v: D.potential, color: '#2ca02c' }], 'no samples');
  if (D.nq > D.q_names.length) {
    var more = document.createElement('span');
    more.textContent = '(first ' + D.q_names.length + ' of ' + D.nq + ')';
    $('keys-q').appendChild(more);
  }
  if (nf > 1 && E[0] !== null && E[nf - 1] !== null) {
    var de = document.createElement('span');
    de.textContent = 'E(end) \u2212 E(0) = ' + fmt(E[nf - 1] - E[0]) + ' J';
    de.style.marginLeft = 'auto';
    $('keys-e').appendChild(de);
  }

  /* ---- controls ------------------------------------------------------------------------ */
  function showTime() {
    $('time').textContent = 't = ' + time.toFixed(3) + ' s / ' + fmt(t1, 6) + ' s';
    if (document.activeElement !== slider || !slider.matches(':active')) slider.value = time;
    plots.forEach(drawPlot);
  }
  function setTime(t) {
    time = Math.min(Math.max(+t || 0, t0), t1);
    dirty = true;
    showTime();
  }
  function seekTo(t) { setTime(t); }
  function play() {
    if (!(t1 > t0)) return;
    if (time >= t1 && !$('loop').checked) time = t0;
    playing = true;
    last = performance.now();  /* the motion starts now, not at the next frame */
    $('play').textContent = 'Pause';
  }
  function pause() {
    playing = false;
    $('play').textContent = 'Play';
  }
  $('play').addEventListener('click', function () { if (playing) pause(); else play(); });
  slider.addEventListener('input', function () { pause(); setTime(+slider.value); });
  var speedIn = $('speed');
  function setSpeed(v) {
    speed = Math.pow(10, Math.min(Math.max(v, -1), 1));
    speedIn.value = Math.log10(speed);
    $('speed-label').textContent = speed.toFixed(speed < 1 ? 2 : speed < 10 ? 2 : 1) + 'x';
  }
  speedIn.addEventListener('input', function () { setSpeed(+speedIn.value); });
  speedIn.addEventListener('dblclick', function () { setSpeed(0); });
  $('fit').addEventListener('click', fit);
  $('show-frames').addEventListener('change', function () {
    if (frameLines) frameLines.visible = this.checked;
    dirty = true;
  });
  $('show-grid').addEventListener('change', function () {
    if (grid) grid.visible = this.checked;
    dirty = true;
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.target && ev.target.tagName === 'INPUT' && ev.target.type !== 'checkbox' && ev.target.type !== 'range') return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return; /* the browser's (Ctrl+F finds, it does not fit) */
    if (ev.key === ' ') { ev.preventDefault(); if (playing) pause(); else play(); }
    else if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') {
      /* the next frame after the time, or the one before it (the frame at or before a time
         between frames) */
      var at = frameAt(time);
      var k = ev.key === 'ArrowRight' ? at[0] + 1 : at[1] > 0 ? at[0] : at[0] - 1;
      if (nf) { pause(); setTime(T[Math.min(Math.max(k, 0), nf - 1)]); }
      ev.preventDefault();
    } else if (ev.key === 'f') fit();
  });

  function tick() {
    /* the clock, not the frame's timestamp: a browser may stamp slow frames as if on time */
    var now = performance.now();
    if (playing) {
      if (last !== null) {
        var t = time + Math.max(0, now - last) / 1000 * speed;
        if (t >= t1) {
          if ($('loop').checked) t = t0 + (t - t0) % (t1 - t0);
          else { t = t1; pause(); }
        }
        setTime(t);
      }
      last = now;
    }
    if (dirty) {
      render();
      dirty = false;
    }
    requestAnimationFrame(tick);
  }

  buildSceneSafely();
  function buildSceneSafely() {
    computeBounds();
    buildScene();
    $('legend').textContent = (gridInfo ? gridInfo + '; ' : '') + 'drag: orbit, right-drag: pan, wheel: zoom' +
      (D.lines.length ? '; magenta lines: constraint connections' : '') +
      (D.contacts.length ? '; yellow: contact spheres' : '');
  }
  function relayout() {
    resize();
    plots.forEach(drawPlotBase);
    showTime();
  }
  window.addEventListener('resize', relayout);
  setSpeed(0);
  relayout();
  render();
  if (D.autoplay) play();
  requestAnimationFrame(tick);

  /* ---- a hook for tests and scripts ---------------------------------------------------- */
  var inv = new THREE.Matrix4();
  window.mbkViewer = {
    ready: true,
    webgl: !!renderer,
    nBodies: nb,
    frames: nf,
    samples: D.samples,
    lines: function () { return D.lines.length; },
    contacts: function () { return contactGroup ? contactGroup.count : 0; },
    drawCalls: function () { return renderer ? renderer.info.render.calls : 0; },
    times: function () { return T.slice(); },
    time: function () { return time; },
    playing: function () { return playing; },
    play: play,
    pause: pause,
    /* pause, go to time t, draw now; returns the time set */
    seek: function (t) { pause(); setTime(t); render(); dirty = false; return time; },
    setSpeed: function (s) { setSpeed(Math.log10(s)); return speed; },
    showFrames: function (on) { $('show-frames').checked = !!on; if (frameLines) frameLines.visible = !!on; dirty = true; },
    /* a body's pose as drawn: read back from the instance matrix of its first shape
       (x, y, z, qw, qx, qy, qz), or null if it has none */
    bodyPose: function (b) {
      for (var gi = 0; gi < groups.length; ++gi) {
        var gr = groups[gi];
        for (var i = 0; i < gr.items.length; ++i) {
          if (gr.items[i].body !== b) continue;
          var m = new THREE.Matrix4().fromArray(gr.mesh.instanceMatrix.array, 16 * i);
          m.multiply(inv.getInverse(gr.items[i].local));
          var p = new THREE.Vector3(), q = new THREE.Quaternion(), s = new THREE.Vector3();
          m.decompose(p, q, s);
          return [p.x, p.y, p.z, q.w, q.x, q.y, q.z];
        }
      }
      return null;
    },
    /* where the moving bodies are on the page now: CSS-pixel rectangles around each
       of their shapes (its 8 box corners projected) */
    bodyRects: function () {
      var out = [], c = new THREE.Vector3(), r = canvas.getBoundingClientRect();
      if (!renderer) return out;
      camera.updateMatrixWorld();
      groups.forEach(function (gr) {
        gr.items.forEach(function (it, i) {
          if (it.body === 0) return;
          var m = new THREE.Matrix4().fromArray(gr.mesh.instanceMatrix.array, 16 * i);
          var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
          for (var k = 0; k < 8; ++k) {
            c.set(k & 1 ? 0.5 : -0.5, k & 2 ? 0.5 : -0.5, k & 4 ? 0.5 : -0.5);
            if (gr.type === 'sphere') c.multiplyScalar(2);       /* unit radius */
            if (gr.type === 'cylinder') { c.x *= 2; c.y *= 2; } /* unit radius, unit length along z */
            c.applyMatrix4(m).project(camera);
            var x = r.left + (c.x + 1) / 2 * r.width, y = r.top + (1 - c.y) / 2 * r.height;
            x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
          }
          out.push([x0, y0, x1, y1]);
        });
      });
      return out;
    },
    canvasRect: function () { var r = canvas.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; },
    three: function () { return { renderer: renderer, scene: scene, camera: camera, groups: groups, grid: grid }; },
    status: function () { return $('status').textContent; },
    notes: function () { return $('notes').textContent; }
  };
})();
