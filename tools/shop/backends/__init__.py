"""One module per shop backend (`SHOP_BACKEND`), each implementing tools/shop/backend.py."""
