-- The shop's products (SHOP_BACKEND=local: imported, or the demo's). One row per product,
-- its title, description, page and variants as one JSON document (written by import-data
-- after validation); `position` keeps the file's order. An import that gives `products`
-- replaces them all, so `id` (new rows, new ids) tells a reader the catalogue changed.
CREATE TABLE products (
    id         INTEGER PRIMARY KEY,
    product_id TEXT NOT NULL,
    document   TEXT NOT NULL,
    position   INTEGER NOT NULL,
    demo       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX products_product_id ON products(product_id);
