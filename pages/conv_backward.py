"""Backward pass and transposed convolution (being built: issue 14)."""

import streamlit as st

st.title("Backward & transposed convolution")
st.info("This page is being written.")
