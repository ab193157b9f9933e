"""One module per vendor runtime the sim imitates: how it holds inputs and outputs, what it
reports about them, what the model sees, and what it refuses."""
