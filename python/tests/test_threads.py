"""Many threads read one model; the GIL is released while opening, decoding and saving."""
import concurrent.futures
import threading
import time

import numpy as np
import onnx

import onnxmap
from conftest import judge_array


def test_many_threads_read_one_model(fixtures):
    path = fixtures / "all_dtypes.onnx"
    reference = {t.name: judge_array(t) for t in onnx.load(str(path)).graph.initializer}
    with onnxmap.open(path) as model:
        names = [n for n in model.keys() if reference.get(n) is not None]

        def read_all(_):
            for _ in range(20):
                for name in names:
                    assert model[name].numpy().tobytes() == reference[name].tobytes()
            return True

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert all(pool.map(read_all, range(8)))


def test_threads_open_and_close_concurrently(fixtures):
    path = fixtures / "external_one_file.onnx"
    expected = onnxmap.open(path)["w0"].numpy().copy()

    def cycle(_):
        for _ in range(30):
            with onnxmap.open(path, mode="read") as model:
                array = model["w0"].numpy()
            assert np.array_equal(array, expected)
        return True

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(cycle, range(4)))


def test_gil_is_released_while_opening(tmp_path):
    """A Python thread keeps running while another thread opens a large model: it could not if
    the open held the GIL."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(60000)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("v0", TensorProto.FLOAT,
                                                                          [1])], [])
    path = tmp_path / "many_nodes.onnx"
    onnx.save(helper.make_model(graph), str(path))
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    thread = threading.Thread(target=ticker)
    thread.start()
    # Opens until a tick lands inside one (the ticker ran while C++ indexed the file), 20 at
    # most: on a loaded machine the ticker may get no CPU during the first few.
    inside = []
    try:
        for _ in range(20):
            start = time.perf_counter()
            onnxmap.open(path, mode="read").close()
            end = time.perf_counter()
            inside = [t for t in list(ticks) if start < t < end]
            if inside:
                break
    finally:
        done.set()
        thread.join()
    assert inside, "no Python thread ran during any of 20 opens"
