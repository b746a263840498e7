"""malleo.order_stats against numpy: the same distinct values and percentiles, bit for bit
(issue 16: they replace np.unique and np.percentile so that a small replay does not import
numpy.ma)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from malleo.order_stats import distinct, distinct_inverse, percentiles

INTS = hnp.arrays(np.int64, st.integers(0, 60),
                  elements=st.integers(-2**40, 2**40) | st.integers(0, 5))
FLOATS = hnp.arrays(np.float64, st.integers(0, 60),
                    elements=st.floats(-1e12, 1e12) | st.sampled_from([0.0, 1.5, np.nan]))
QS = st.lists(st.floats(0, 100) | st.sampled_from([0, 50, 95, 99, 100]), min_size=1,
              max_size=6)


@given(INTS | FLOATS)
@settings(max_examples=300, deadline=None)
def test_distinct_is_np_unique(values):
    got, want = distinct(values), np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)        # NaN equal to NaN


@given(INTS)
@settings(max_examples=200, deadline=None)
def test_distinct_inverse_is_np_unique_with_its_inverse(values):
    uniq, where = distinct_inverse(values)
    want_uniq, want_where = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(where, want_where)
    assert where.dtype == np.intp


@given(INTS.filter(len), QS)
@settings(max_examples=300, deadline=None)
def test_percentiles_of_integers_are_np_percentile(values, q):
    got, want = percentiles(values, q), np.percentile(values, q)
    assert got.dtype == np.float64
    assert got.tobytes() == np.asarray(want, dtype=np.float64).tobytes()
    np.testing.assert_array_equal(values, values.copy())


@given(FLOATS.filter(len), QS)
@settings(max_examples=300, deadline=None)
def test_percentiles_of_floats_are_np_percentile(values, q):
    got, want = percentiles(values, q), np.percentile(values, q)
    np.testing.assert_array_equal(got, want)


def test_percentiles_leave_the_input_alone_and_check_their_arguments():
    values = np.array([5, 1, 4, 2, 3])
    np.testing.assert_array_equal(percentiles(values, [50, 95, 99]),
                                  np.percentile(values, [50, 95, 99]))
    np.testing.assert_array_equal(values, [5, 1, 4, 2, 3])
    with pytest.raises(ValueError, match="empty"):
        percentiles(np.array([], dtype=np.int64), [50])
    with pytest.raises(ValueError, match="range"):
        percentiles(values, [101])
    assert distinct([]).size == 0
